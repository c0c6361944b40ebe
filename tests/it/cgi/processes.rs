//! Children: timeouts, concurrency, the process limit, disconnects, and
//! reaping.

use std::net::Shutdown;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use super::*;

/// A script that records its pid and a grandchild's, then waits for
/// `gate` (10 s at most) before answering.
pub(super) fn gated_script(base: &Path, tag: &str) -> String {
    let base = base.display();
    format!(
        "#!/bin/sh\n\
         sleep 30 &\n\
         echo $! > {base}/{tag}.grandchild.$QUERY_STRING\n\
         echo $$ > {base}/{tag}.pid.$QUERY_STRING\n\
         i=0\n\
         while [ ! -e {base}/gate ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done\n\
         kill $! 2>/dev/null\n\
         printf 'Content-Type: text/plain\\r\\n\\r\\nslow %s\\n' \"$QUERY_STRING\"\n"
    )
}

/// These scripts record their pids in the base directory, which the
/// kernel sandbox forbids CGI programs (they inherit it): they run
/// without it. The sandbox's own tests are in tests/it/confinement.rs.
fn writing_builder(config: &str) -> Builder {
    let mut b = builder(config);
    b.arg("--no-sandbox");
    b
}

#[test]
fn timeout_kills_the_process_group_and_answers_504() {
    let b = writing_builder(&format!("{CGI_BIN}[timeouts]\ncgi = \"1s\"\n"));
    let base = b.base().to_path_buf();
    script(
        &b,
        "cgi-bin/hang.sh",
        &format!(
            "#!/bin/sh\nsleep 30 &\necho $! > {0}/hang.grandchild\necho $$ > {0}/hang.pid\nsleep 30\n",
            base.display()
        ),
    );
    let server = b.start();
    let r = server.get("/cgi-bin/hang.sh");
    assert_error(&r, 504, "Gateway Timeout", "", Conn::Close);
    let pid = read_pid(&base.join("hang.pid"));
    let grandchild = read_pid(&base.join("hang.grandchild"));
    // The script is killed and reaped by the server; the grandchild in
    // its group is killed (its reaping is up to whoever adopted it).
    wait_until("the script to be reaped", || proc_stat(pid).is_none());
    wait_until("the grandchild to die", || !running(grandchild));
    server.wait_stderr_line("timed out");
    stop(server);
}

#[test]
fn timeout_after_output_truncates_and_closes() {
    let b = writing_builder(&format!("{CGI_BIN}[timeouts]\ncgi = \"1s\"\n"));
    let base = b.base().to_path_buf();
    script(
        &b,
        "cgi-bin/stall.sh",
        &format!(
            "#!/bin/sh\necho $$ > {}/stall.pid\n\
             printf 'Content-Type: text/plain\\r\\n\\r\\npartial'\nexec sleep 30\n",
            base.display()
        ),
    );
    let server = b.start();
    let mut c = server.connect();
    c.send(b"GET /cgi-bin/stall.sh HTTP/1.1\r\nHost: h\r\n\r\n");
    let raw = String::from_utf8(c.read_to_end()).expect("UTF-8");
    let (h, body) = raw.split_once("\r\n\r\n").expect("head");
    assert!(h.starts_with("HTTP/1.1 200 OK\r\n"), "{h}");
    // No last chunk: the client can tell the body is incomplete.
    assert_eq!(body, "7\r\npartial\r\n");
    let pid = read_pid(&base.join("stall.pid"));
    wait_until("the stalled script to be reaped", || {
        proc_stat(pid).is_none()
    });
    stop(server);
}

#[test]
fn timeout_is_for_silence_not_for_slow_output() {
    let b = writing_builder(&format!("{CGI_BIN}[timeouts]\ncgi = \"2s\"\n"));
    // Output every 0.25 s for 3 s: never 2 s without progress.
    script(
        &b,
        "cgi-bin/trickle.sh",
        "#!/bin/sh\nprintf 'Content-Type: text/plain\\r\\n\\r\\n'\n\
         for i in 1 2 3 4 5 6 7 8 9 10 11 12; do printf x; sleep 0.25; done\n",
    );
    let server = b.start();
    let r = server.get("/cgi-bin/trickle.sh");
    assert_eq!((r.status, r.text().as_str()), (200, "xxxxxxxxxxxx"));
    stop(server);
}

#[test]
fn slow_scripts_do_not_block_static_files() {
    let mut b = writing_builder(CGI_BIN);
    let base = b.base().to_path_buf();
    script(&b, "cgi-bin/slow.sh", &gated_script(&base, "slow"));
    let big = pattern(2 * MIB);
    b.file("small.txt", b"small\n").file("big.bin", &big);
    let server = b.start();
    let addr = server.addr();
    let done = Arc::new(AtomicUsize::new(0));
    let slow: Vec<_> = (0..4)
        .map(|i| {
            let done = done.clone();
            std::thread::spawn(move || {
                let mut c = Client::connect(addr);
                c.send(format!("GET /cgi-bin/slow.sh?{i} HTTP/1.1\r\nHost: h\r\n\r\n").as_bytes());
                let r = c.response();
                done.fetch_add(1, Ordering::SeqCst);
                r
            })
        })
        .collect();
    for i in 0..4 {
        read_pid(&base.join(format!("slow.pid.{i}")));
    }
    // All four scripts run and wait: static files are answered anyway,
    // on new connections and on a pipelined one.
    for _ in 0..5 {
        assert_file(&server.get("/small.txt"), b"small\n", TXT, "", Conn::Close);
    }
    let (mut c, rs) = exchange(
        &server,
        b"GET /small.txt HTTP/1.1\r\nHost: h\r\n\r\nGET /big.bin HTTP/1.1\r\nHost: h\r\n\r\n\
          GET /small.txt HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n",
        &[false, false, false],
    );
    assert_file(&rs[0], b"small\n", TXT, "", Conn::None);
    assert_eq!(rs[1].status, 200);
    assert!(rs[1].body == big, "big.bin differs");
    assert_file(&rs[2], b"small\n", TXT, "", Conn::Close);
    c.expect_closed();
    assert_eq!(
        done.load(Ordering::SeqCst),
        0,
        "the slow scripts were still running"
    );

    write_file(&base.join("gate"), b"");
    for (i, t) in slow.into_iter().enumerate() {
        let r = t.join().expect("slow client");
        assert_eq!(r.status, 200);
        assert_eq!(r.text(), format!("slow {i}\n"));
    }
    stop(server);
}

#[test]
fn process_limit_answers_503() {
    let mut b = writing_builder(&format!("{CGI_BIN}[limits]\ncgi_processes = 2\n"));
    b.workers(1);
    let base = b.base().to_path_buf();
    script(&b, "cgi-bin/slow.sh", &gated_script(&base, "lim"));
    script(&b, "cgi-bin/crash.sh", "#!/bin/sh\nkill -SEGV $$\n");
    script(
        &b,
        "cgi-bin/local.sh",
        "#!/bin/sh\nprintf 'Location: /f.txt\\r\\n\\r\\n'\n",
    );
    b.file("f.txt", b"f");
    let server = b.start();
    // Failed and redirected scripts give their slot back.
    for _ in 0..3 {
        assert_eq!(server.get("/cgi-bin/crash.sh").status, 502);
        assert_eq!(server.get("/cgi-bin/local.sh").text(), "f");
    }
    let addr = server.addr();
    let slow: Vec<_> = (0..2)
        .map(|i| {
            std::thread::spawn(move || {
                let mut c = Client::connect(addr);
                c.send(format!("GET /cgi-bin/slow.sh?{i} HTTP/1.1\r\nHost: h\r\n\r\n").as_bytes());
                c.response()
            })
        })
        .collect();
    for i in 0..2 {
        read_pid(&base.join(format!("lim.pid.{i}")));
    }
    assert_error(
        &server.get("/cgi-bin/slow.sh?2"),
        503,
        "Service Unavailable",
        "",
        Conn::Close,
    );
    assert!(
        !base.join("lim.pid.2").exists(),
        "the third script never started"
    );
    write_file(&base.join("gate"), b"");
    for (i, t) in slow.into_iter().enumerate() {
        assert_eq!(t.join().expect("slow client").text(), format!("slow {i}\n"));
    }
    // The slots are free again.
    assert_eq!(server.get("/cgi-bin/slow.sh?3").text(), "slow 3\n");
    stop(server);
}

#[test]
fn client_disconnect_kills_the_child() {
    let b = writing_builder(CGI_BIN);
    let base = b.base().to_path_buf();
    script(&b, "cgi-bin/wait.sh", &gated_script(&base, "gone"));
    let server = b.start();
    let mut c = server.connect();
    c.send(b"GET /cgi-bin/wait.sh?x HTTP/1.1\r\nHost: h\r\n\r\n");
    let pid = read_pid(&base.join("gone.pid.x"));
    let grandchild = read_pid(&base.join("gone.grandchild.x"));
    drop(c);
    wait_until("the script to be reaped", || proc_stat(pid).is_none());
    wait_until("the grandchild to die", || !running(grandchild));
    stop(server);
}

#[test]
fn disconnect_while_streaming_kills_the_child() {
    let b = writing_builder(CGI_BIN);
    let base = b.base().to_path_buf();
    script(
        &b,
        "cgi-bin/endless.sh",
        &format!(
            "#!/bin/sh\necho $$ > {}/endless.pid\nprintf 'Content-Type: text/plain\\r\\n\\r\\n'\n\
             while :; do echo 0123456789abcdef0123456789abcdef; done\n",
            base.display()
        ),
    );
    let server = b.start();
    let mut c = server.connect();
    c.send(b"GET /cgi-bin/endless.sh HTTP/1.1\r\nHost: h\r\n\r\n");
    let mut tmp = [0u8; 65536];
    let mut got = 0;
    while got < 200_000 {
        got += c.stream.read(&mut tmp).expect("read");
    }
    let pid = read_pid(&base.join("endless.pid"));
    let _ = c.stream.shutdown(Shutdown::Both);
    drop(c);
    wait_until("the endless script to be reaped", || {
        proc_stat(pid).is_none()
    });
    stop(server);
}

#[test]
fn no_children_outlive_their_requests_or_the_server() {
    let mut b = writing_builder(&format!(
        "{CGI_BIN}[timeouts]\ncgi = \"1s\"\nshutdown = \"500ms\"\n"
    ));
    let base = b.base().to_path_buf();
    script(
        &b,
        "cgi-bin/ok.sh",
        "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\nok'\n",
    );
    script(&b, "cgi-bin/crash.sh", "#!/bin/sh\nkill -SEGV $$\n");
    // Answers, then lingers a little: it is reaped after its request.
    script(
        &b,
        "cgi-bin/early.sh",
        "#!/bin/sh\nprintf 'Location: /f.txt\\r\\n\\r\\n'\nsleep 0.2\n",
    );
    script(&b, "cgi-bin/hang.sh", &gated_script(&base, "hang"));
    b.file("f.txt", b"f");
    let mut server = b.start();
    let spid = server.pid() as i32;

    for path in ["/cgi-bin/ok.sh", "/cgi-bin/crash.sh", "/cgi-bin/early.sh"] {
        for _ in 0..3 {
            server.get(path);
        }
    }
    // One killed by the timeout, one by a client leaving.
    server.get("/cgi-bin/hang.sh?timeout");
    let mut c = server.connect();
    c.send(b"GET /cgi-bin/hang.sh?left HTTP/1.1\r\nHost: h\r\n\r\n");
    read_pid(&base.join("hang.pid.left"));
    drop(c);
    // Every child is reaped while the server runs: no zombies, and in the
    // end no children at all.
    wait_until("the server to have no children", || {
        children_of(spid).is_empty()
    });

    // One still running at shutdown.
    let mut c = server.connect();
    c.send(b"GET /cgi-bin/hang.sh?shutdown HTTP/1.1\r\nHost: h\r\n\r\n");
    let pid = read_pid(&base.join("hang.pid.shutdown"));
    let grandchild = read_pid(&base.join("hang.grandchild.shutdown"));
    assert_eq!(proc_stat(pid).map(|(_, ppid)| ppid), Some(spid));
    server.signal(libc::SIGTERM);
    assert!(
        server.wait_exit(Duration::from_secs(10)).is_some(),
        "brisk did not exit after SIGTERM"
    );
    // The server killed and reaped it before exiting: a child it left
    // unreaped would now be a zombie adopted by another process.
    assert!(proc_stat(pid).is_none(), "the script outlived the server");
    wait_until("the grandchild to die", || !running(grandchild));
    // The client was told the response will not come.
    assert_eq!(c.read_to_end(), b"");
}

#[test]
fn a_client_leaving_mid_body_frees_its_slot_at_once() {
    // One process slot, and a CGI timeout (and body timeout) far longer
    // than the test may take: the slot can only come back because the
    // server noticed the client leave. With the sandbox on (the default)
    // and the launcher, as a user runs it.
    let mut b = builder(&format!(
        "{CGI_BIN}[limits]\ncgi_processes = 1\n[timeouts]\ncgi = \"600s\"\nbody = \"600s\"\n"
    ));
    b.workers(1);
    // Reads its whole body (it never comes), with a grandchild in its group.
    script(
        &b,
        "cgi-bin/upload.sh",
        "#!/bin/sh\nsleep 600 &\ncat >/dev/null\nprintf 'Content-Type: text/plain\\r\\n\\r\\nstored'\n",
    );
    script(
        &b,
        "cgi-bin/hello.sh",
        "#!/bin/sh\nprintf 'Content-Type: text/plain\\r\\n\\r\\nhello'\n",
    );
    let server = b.start();
    let upload = format!("{}/upload.sh", canon(&server.base.path.join("cgi-bin")));
    // A Content-Length body cut short by a FIN, then by a reset; a
    // chunked one (held: no program runs yet) cut short by a FIN.
    for (how, framing) in [
        ("FIN", "Content-Length: 1000000"),
        ("RST", "Content-Length: 1000000"),
        ("FIN", "Transfer-Encoding: chunked"),
    ] {
        let chunked = framing.contains("chunked");
        let mut c = server.connect();
        let mut req = format!("POST /cgi-bin/upload.sh HTTP/1.1\r\nHost: h\r\n{framing}\r\n\r\n")
            .into_bytes();
        if chunked {
            req.extend_from_slice(b"2000\r\n");
        }
        req.extend_from_slice(&pattern(5000));
        c.send(&req);
        let group = if chunked {
            None
        } else {
            let mut pid = 0;
            wait_until("the upload script to start", || {
                pid = processes_running(&upload).first().copied().unwrap_or(0);
                pid != 0
            });
            assert_eq!(
                server.get("/cgi-bin/hello.sh").status,
                503,
                "{how}: the one slot is taken"
            );
            Some(pid)
        };
        if how == "RST" {
            // SO_LINGER 0: close() sends a reset.
            let fd = std::os::fd::AsRawFd::as_raw_fd(&c.stream);
            let linger = libc::linger {
                l_onoff: 1,
                l_linger: 0,
            };
            // SAFETY: setsockopt on our own socket with a valid linger.
            unsafe {
                libc::setsockopt(
                    fd,
                    libc::SOL_SOCKET,
                    libc::SO_LINGER,
                    (&linger as *const libc::linger).cast(),
                    std::mem::size_of::<libc::linger>() as libc::socklen_t,
                )
            };
        } else {
            c.stream.shutdown(Shutdown::Write).expect("shutdown");
        }
        drop(c);
        // The next CGI request gets the slot: retried while the server
        // takes in the close (far less than the 600 s after which a
        // timeout would free it).
        let r = wait_for(
            &format!("{how} {framing}: an answer other than 503"),
            || Some(server.get("/cgi-bin/hello.sh")).filter(|r| r.status != 503),
        );
        assert_eq!((r.status, r.text().as_str()), (200, "hello"), "{how}");
        // Nothing is left behind: the script and its grandchild are gone.
        if let Some(pid) = group {
            wait_until("the upload script's group to end", || {
                group_members(pid).is_empty()
            });
        }
    }
    wait_until("the server's error log to say why", || {
        server
            .stderr()
            .contains("closed the connection before its request body was complete")
    });
    stop(server);
}

#[test]
fn a_background_job_left_by_an_exited_script_is_killed_with_the_sandbox_on() {
    // The script exits at once, but a background job it started holds
    // its output: the answer does not end. With the sandbox on (the
    // default) the launcher started the script and reaped it; what is
    // left of its process group must still be killed, as without the
    // sandbox: at the CGI timeout, and when the client leaves.
    for (timeout, leaves) in [("1s", false), ("600s", true)] {
        let b = builder(&format!("{CGI_BIN}[timeouts]\ncgi = \"{timeout}\"\n"));
        script(
            &b,
            "cgi-bin/bg.sh",
            "#!/bin/sh\nsleep 300 &\nprintf 'Content-Type: text/plain\\r\\n\\r\\npid=%s;' $!\n",
        );
        let server = b.start();
        let mut c = server.connect();
        c.send(b"GET /cgi-bin/bg.sh HTTP/1.1\r\nHost: h\r\n\r\n");
        // The job's pid, from the body's first bytes.
        let pid: i32 = loop {
            let text = String::from_utf8_lossy(c.unread()).into_owned();
            let found = text
                .split_once("pid=")
                .and_then(|(_, rest)| rest.split_once(';'))
                .map(|(pid, _)| pid.parse().expect("pid"));
            if let Some(pid) = found {
                break pid;
            }
            let n = c.unread().len() + 1;
            c.read_at_least(n);
        };
        assert!(running(pid), "the job runs");
        if leaves {
            drop(c);
        } else {
            // Cut short at the timeout (no last chunk), then closed.
            let rest = c.read_to_end();
            assert!(!rest.ends_with(b"0\r\n\r\n"), "{rest:?}");
            server.wait_stderr_line("timed out");
        }
        wait_until(
            &format!("the job the script left to be killed (leaves: {leaves})"),
            || !running(pid),
        );
        stop(server);
    }
}
