//! The access log names the upstream of a proxied request (nginx's
//! `$upstream_addr`, `$upstream_status`, `$upstream_header_time`), over
//! HTTP/1.1 and h2c, and `-` for an answer no upstream gave.

use crate::common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::thread;

use common::*;

#[test]
fn the_access_log_names_the_upstream_and_its_status() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            thread::spawn(move || {
                conn.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                loop {
                    while let Some(end) = find(&buf, b"\r\n\r\n") {
                        buf.drain(..end + 4);
                        let answer = b"HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok";
                        if conn.write_all(answer).is_err() {
                            return;
                        }
                    }
                    match conn.read(&mut chunk) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
            });
        }
    });
    let mut b = Builder::new();
    b.file("a.txt", b"AAAA");
    b.access_log_from_config();
    b.config(&format!(
        "[log]\naccess = \"access.log\"\n\
         format = '$request_uri $status $upstream_addr $upstream_status $upstream_header_time'\n\n\
         [[reverse_proxy]]\npath = \"/api/\"\nto = \"http://{addr}\"\n"
    ));
    let s = b.start();
    assert_eq!(s.get("/api/one").status, 201);
    assert_eq!(s.get("/a.txt").status, 200);
    let line = |path: &str| {
        let l = s.wait_access_line(|l| l.starts_with(path.as_bytes()));
        String::from_utf8(l).unwrap()
    };
    let proxied = line("/api/one ");
    let want = format!("/api/one 201 {addr} 201 0.");
    assert!(proxied.starts_with(&want), "{proxied:?}, not {want:?}…");
    assert_eq!(line("/a.txt "), "/a.txt 200 - - -");
    // Over h2c, the same.
    let mut c = common::h2::H2::connect(s.addr(), &[], 0);
    let two = c.get("/api/two", &[]);
    assert_eq!(c.answers(&[two])[0].status(), "201");
    let proxied = line("/api/two ");
    assert!(
        proxied.starts_with(&format!("/api/two 201 {addr} 201 0.")),
        "{proxied:?}"
    );
}
