//! capture family: what is optimized (filled in by the family's issue).
