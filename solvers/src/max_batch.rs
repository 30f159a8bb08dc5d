//! The largest batch size whose plan fits, for any algorithm (filled in by the DawnPiper issue).
