//! Every `unsafe` block and raw syscall, behind safe functions.
