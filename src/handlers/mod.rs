//! Handlers decide *what* to send: a status, headers and a body source.
//! They never touch a socket; the server decides how bytes leave.

pub mod autoindex;
