//! Generators: analytic layer chains of well-known networks, from FLOPs and shapes.
