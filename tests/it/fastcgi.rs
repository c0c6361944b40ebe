//! FastCGI on the wire (`[[fastcgi]]`) with a real php-fpm: started here
//! with a configuration of its own in a temporary directory (a unix
//! socket there, run as the current user, no php.ini), PHP scripts in
//! brisk's document root. What PHP sees ($_SERVER, forms, uploads,
//! sessions) and what the client gets (statuses, redirects, a long
//! answer streamed), over HTTP/1.1 and h2c.

use crate::common;

mod app;

use std::fs;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;

use common::*;

const FPM: &str = "/usr/sbin/php-fpm8.2";

/// A php-fpm pool listening on a unix socket in its own directory;
/// stopped (and reaped, its children with it) on drop.
pub(super) struct Fpm {
    child: Option<KillOnDrop>,
    pub(super) sock: PathBuf,
    dir: TempDir,
}

impl Fpm {
    /// Starts php-fpm, or says why the test skips (none installed).
    pub(super) fn start() -> Option<Fpm> {
        Fpm::start_with("")
    }

    /// Starts php-fpm with `more` lines in its pool's configuration.
    pub(super) fn start_with(more: &str) -> Option<Fpm> {
        if !Path::new(FPM).exists() {
            skip(&format!("no {FPM}: FastCGI is not tested against php-fpm"));
            return None;
        }
        let dir = TempDir::new("fpm");
        let sock = dir.path.join("fpm.sock");
        let sessions = dir.path.join("sessions");
        fs::create_dir(&sessions).unwrap();
        let conf = dir.path.join("fpm.conf");
        let d = dir.path.display();
        // As the current user; root must say so (`-R` and the user).
        use std::os::unix::fs::MetadataExt as _;
        let root = fs::metadata("/proc/self").unwrap().uid() == 0;
        let user = if root { "user = root\n" } else { "" };
        fs::write(
            &conf,
            format!(
                "[global]\n\
                 pid = {d}/fpm.pid\n\
                 error_log = {d}/fpm.log\n\
                 daemonize = no\n\
                 [app]\n\
                 {user}\
                 listen = {sock}\n\
                 pm = static\n\
                 pm.max_children = 4\n\
                 catch_workers_output = yes\n\
                 php_admin_value[session.save_path] = {sessions}\n\
                 php_admin_value[upload_tmp_dir] = {d}\n\
                 php_admin_value[output_buffering] = 0\n\
                 php_admin_flag[log_errors] = on\n\
                 {more}",
                sock = sock.display(),
                sessions = sessions.display(),
            ),
        )
        .unwrap();
        let child = Command::new(FPM)
            .args(["-n", "-F"])
            .args(root.then_some("-R"))
            .arg("-y")
            .arg(&conf)
            .arg("-p")
            .arg(&dir.path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(fs::File::create(dir.path.join("fpm.stderr")).unwrap())
            .spawn()
            .expect("start php-fpm");
        let fpm = Fpm {
            child: Some(KillOnDrop(child)),
            sock,
            dir,
        };
        wait_until("php-fpm's socket", || fpm.sock.exists());
        Some(fpm)
    }

    /// Stops php-fpm (SIGTERM: the master stops its children, which a
    /// SIGKILL would leave behind) and waits for it; its socket goes
    /// with it.
    fn stop(&mut self) {
        if let Some(mut fpm) = self.child.take() {
            // SAFETY: a plain kill(2) of our own child, not yet reaped.
            unsafe { libc::kill(fpm.0.id() as i32, libc::SIGTERM) };
            let _ = wait_exit(&mut fpm.0, WAIT_LIMIT);
        }
        let _ = fs::remove_file(&self.sock);
    }
}

impl Drop for Fpm {
    fn drop(&mut self) {
        self.stop();
    }
}

/// brisk in front of `fpm`, with the test scripts in its root.
fn brisk(fpm: &Fpm) -> Server {
    brisk_to(&format!("unix:{}", fpm.sock.display()), 0)
}

/// brisk in front of the FastCGI server `to`, keeping `keepalive` idle
/// connections to it.
fn brisk_to(to: &str, keepalive: usize) -> Server {
    let mut b = Builder::new();
    b.file(
        "env.php",
        b"<?php\nforeach (['SCRIPT_FILENAME', 'SCRIPT_NAME', 'PATH_INFO', 'PATH_TRANSLATED', \
          'DOCUMENT_ROOT', 'REQUEST_URI', 'QUERY_STRING', 'REQUEST_METHOD', 'SERVER_SOFTWARE', \
          'REQUEST_SCHEME', 'HTTPS', 'GATEWAY_INTERFACE', 'SERVER_PROTOCOL', 'CONTENT_LENGTH', \
          'HTTP_X_TEST', 'APP_ENV', 'PATH'] as $k) {\n\
          echo $k, '=', $_SERVER[$k] ?? '(unset)', \"\\n\";\n}\n",
    )
    .file(
        "form.php",
        b"<?php\necho 'a=', $_GET['a'] ?? '-', ' b=', $_POST['b'] ?? '-', ' c=', $_POST['c'] ?? '-', \"\\n\";\n",
    )
    .file(
        "upload.php",
        b"<?php\n$f = $_FILES['f'];\necho $f['name'], ' ', $f['size'], ' ', md5_file($f['tmp_name']), ' ', $_POST['note'], \"\\n\";\n",
    )
    .file(
        "redirect.php",
        b"<?php\nheader('Location: http://example.test/next');\necho \"moved\\n\";\n",
    )
    .file(
        "gone.php",
        b"<?php\nhttp_response_code(404);\nheader('X-App: php');\necho \"no such thing\\n\";\n",
    )
    .file(
        "count.php",
        b"<?php\nsession_start();\n$_SESSION['n'] = ($_SESSION['n'] ?? 0) + 1;\necho 'n=', $_SESSION['n'], \"\\n\";\n",
    )
    .file(
        "big.php",
        b"<?php\n$piece = str_repeat('0123456789abcdef', 65536);\nfor ($i = 0; $i < 10; $i++) { echo $piece; flush(); }\n",
    )
    .file(
        "warn.php",
        b"<?php\nerror_log('careful: something odd');\necho \"done\\n\";\n",
    )
    .file(
        "auth.php",
        b"<?php\necho $_SERVER['HTTP_AUTHORIZATION'] ?? '(unset)', ' ', $_SERVER['PHP_AUTH_USER'] ?? '(unset)', ' ', $_SERVER['PHP_AUTH_PW'] ?? '(unset)', ' ', $_SERVER['HTTP_PROXY_AUTHORIZATION'] ?? '(unset)', \"\\n\";\n",
    )
    .file("uploads/evil.jpg", b"<?php echo 'EVIL'; ?>")
    .file("app/index.php", b"<?php\necho 'front ', $_SERVER['REQUEST_URI'], ' ', $_SERVER['SCRIPT_NAME'], \"\\n\";\n")
    .file("app/style.css", b"body{}\n")
    .file("app/sub/notes.txt", b"notes\n")
    .file("dir/index.php", b"<?php\necho \"dir index\\n\";\n")
    .file("slow/nap.php", b"<?php\nsleep(5);\necho \"late\\n\";\n");
    b.config(&format!(
        "[[fastcgi]]\npath = \"/slow/\"\nto = \"{to}\"\nread_timeout = \"300ms\"\n\n\
         [[fastcgi]]\npath = \"/app/\"\nto = \"{to}\"\nsplit_path = \".php\"\n\
         fallback = \"/app/index.php\"\n\n\
         [[fastcgi]]\npattern = \"*.php\"\nto = \"{to}\"\nindex = \"index.php\"\n\
         split_path = \".php\"\nenv = {{ APP_ENV = \"test\" }}\nkeepalive = {keepalive}\n"
    ));
    b.start()
}

/// The `NAME=value` lines of env.php's answer.
fn var<'a>(body: &'a str, name: &str) -> &'a str {
    body.lines()
        .find_map(|l| l.strip_prefix(name).and_then(|r| r.strip_prefix('=')))
        .unwrap_or_else(|| panic!("no {name} in {body}"))
}

fn started() -> Option<(Fpm, Server)> {
    let fpm = Fpm::start()?;
    let server = brisk(&fpm);
    Some((fpm, server))
}

/// An application does its own HTTP authentication (PHP's
/// `PHP_AUTH_USER` comes from `HTTP_AUTHORIZATION`), as behind nginx;
/// `Proxy-Authorization` is brisk's hop's, never passed.
#[test]
fn php_gets_the_authorization_for_its_own_login() {
    let Some((_fpm, s)) = started() else { return };
    let r = s.get_with(
        "/auth.php",
        "Authorization: Basic dTpw\r\nProxy-Authorization: Basic eDp5\r\n",
    );
    assert_eq!(
        (r.status, r.text()),
        (200, "Basic dTpw u p (unset)\n".into())
    );
    let r = s.get("/auth.php");
    assert_eq!(r.text(), "(unset) (unset) (unset) (unset)\n");
}

#[test]
fn php_sees_the_cgi_variables_and_path_info() {
    let Some((_fpm, s)) = started() else { return };
    let root = fs::canonicalize(&s.root).unwrap();
    let r = s.get_with("/env.php/b/c?x=1&y=%20", "X-Test: yes\r\n");
    assert_eq!(r.status, 200, "{}", r.text());
    let body = String::from_utf8(r.body.clone()).unwrap();
    let want = [
        ("SCRIPT_FILENAME", format!("{}/env.php", root.display())),
        ("SCRIPT_NAME", "/env.php".into()),
        ("PATH_INFO", "/b/c".into()),
        ("PATH_TRANSLATED", format!("{}/b/c", root.display())),
        ("DOCUMENT_ROOT", root.display().to_string()),
        ("REQUEST_URI", "/env.php/b/c?x=1&y=%20".into()),
        ("QUERY_STRING", "x=1&y=%20".into()),
        ("REQUEST_METHOD", "GET".into()),
        (
            "SERVER_SOFTWARE",
            format!("brisk/{}", env!("CARGO_PKG_VERSION")),
        ),
        ("REQUEST_SCHEME", "http".into()),
        ("HTTPS", "(unset)".into()),
        ("GATEWAY_INTERFACE", "CGI/1.1".into()),
        ("SERVER_PROTOCOL", "HTTP/1.1".into()),
        ("CONTENT_LENGTH", "(unset)".into()),
        ("HTTP_X_TEST", "yes".into()),
        ("APP_ENV", "test".into()),
        ("PATH", "(unset)".into()),
    ];
    for (name, value) in want {
        assert_eq!(var(&body, name), value, "{name} in\n{body}");
    }
    assert_eq!(r.header("Content-Type"), Some("text/html; charset=UTF-8"));
}

#[test]
fn forms_by_get_and_post_and_a_chunked_post() {
    let Some((_fpm, s)) = started() else { return };
    let r = s.get("/form.php?a=1");
    assert_eq!(r.text(), "a=1 b=- c=-\n");
    let form = "b=two&c=3%204";
    let r = s.request(
        format!(
            "POST /form.php?a=x HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\
             Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{form}",
            form.len()
        )
        .as_bytes(),
    );
    assert_eq!(r.status, 200);
    assert_eq!(r.text(), "a=x b=two c=3 4\n");
    // A chunked body is counted first: PHP needs CONTENT_LENGTH.
    let r = s.request(
        b"POST /form.php HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\
          Content-Type: application/x-www-form-urlencoded\r\nTransfer-Encoding: chunked\r\n\r\n\
          4\r\nb=ch\r\n6\r\nunked!\r\n0\r\n\r\n",
    );
    assert_eq!(r.status, 200);
    assert_eq!(r.text(), "a=- b=chunked! c=-\n");
}

#[test]
fn a_multipart_upload_reaches_php_whole() {
    let Some((_fpm, s)) = started() else { return };
    let file: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 251) as u8).collect();
    let mut body = Vec::new();
    body.extend_from_slice(
        b"--XyZ\r\nContent-Disposition: form-data; name=\"note\"\r\n\r\nhello\r\n\
          --XyZ\r\nContent-Disposition: form-data; name=\"f\"; filename=\"data.bin\"\r\n\
          Content-Type: application/octet-stream\r\n\r\n",
    );
    body.extend_from_slice(&file);
    body.extend_from_slice(b"\r\n--XyZ--\r\n");
    let mut raw = format!(
        "POST /upload.php HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\
         Content-Type: multipart/form-data; boundary=XyZ\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    raw.extend_from_slice(&body);
    let r = s.request(&raw);
    assert_eq!(r.status, 200, "{}", r.text());
    let md5 = Command::new("md5sum")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write as _;
            c.stdin.take().unwrap().write_all(&file)?;
            c.wait_with_output()
        })
        .expect("md5sum");
    let md5 = String::from_utf8(md5.stdout).unwrap();
    let md5 = md5.split_whitespace().next().unwrap();
    assert_eq!(r.text(), format!("data.bin 300000 {md5} hello\n"));
}

#[test]
fn statuses_redirects_and_sessions_come_from_php() {
    let Some((_fpm, s)) = started() else { return };
    let r = s.get("/redirect.php");
    assert_eq!(r.status, 302, "{}", r.head);
    assert_eq!(r.header("Location"), Some("http://example.test/next"));
    let r = s.get("/gone.php");
    assert_eq!(r.status, 404, "{}", r.head);
    assert_eq!(r.header("X-App"), Some("php"));
    assert_eq!(r.text(), "no such thing\n");

    let r = s.get("/count.php");
    assert_eq!(r.text(), "n=1\n");
    let cookie = r
        .header("Set-Cookie")
        .expect("a session cookie")
        .to_string();
    let id = cookie.split(';').next().unwrap();
    assert!(id.starts_with("PHPSESSID="), "{cookie}");
    let r = s.get_with("/count.php", &format!("Cookie: {id}\r\n"));
    assert_eq!(r.text(), "n=2\n");
}

#[test]
fn a_10_mb_answer_streams_whole() {
    let Some((_fpm, s)) = started() else { return };
    let r = s.get("/big.php");
    assert_eq!(r.status, 200);
    let piece = b"0123456789abcdef".repeat(65536);
    assert_eq!(r.body.len(), 10 * piece.len());
    assert!(r.body.chunks(piece.len()).all(|c| c == piece));
}

#[test]
fn a_client_that_leaves_mid_answer_ends_its_request_and_no_other() {
    let Some(fpm) = Fpm::start() else { return };
    let s = brisk_to(&format!("unix:{}", fpm.sock.display()), 2);
    for _ in 0..3 {
        let mut c = s.connect();
        c.send(b"GET /big.php HTTP/1.1\r\nHost: t\r\n\r\n");
        c.read_at_least(100_000);
        drop(c);
    }
    // (Its connection to php-fpm is not kept: the next requests get
    // whole answers of their own.)
    for i in 0..5 {
        assert_eq!(
            s.get(&format!("/form.php?a={i}")).text(),
            format!("a={i} b=- c=-\n")
        );
    }
    assert_eq!(s.get("/big.php").body.len(), 10 << 20);
}

#[test]
fn php_warnings_go_to_the_error_log() {
    let Some((_fpm, s)) = started() else { return };
    assert_eq!(s.get("/warn.php").text(), "done\n");
    let line = s.wait_stderr_line("careful: something odd");
    assert!(
        line.contains("fastcgi ") && line.contains("warn.php"),
        "{line}"
    );
}

/// php-fpm sends each PHP message in a STDERR record of its own, with no
/// newline (`; ` before every one but the first): each is a line of the
/// error log, as nginx logs each record, none lost however many a
/// request has, and none waits for the request's end.
#[test]
fn each_php_message_is_a_line_of_the_error_log() {
    let Some((_fpm, s)) = started() else { return };
    fs::write(
        s.root.join("chatty.php"),
        b"<?php\nfor ($i = 0; $i < 150; $i++) { error_log(sprintf('message %03d of a chatty script', $i)); }\necho \"done\\n\";\n",
    )
    .unwrap();
    assert_eq!(s.get("/chatty.php").text(), "done\n");
    let last = s.wait_stderr_line("message 149 of a chatty script");
    assert!(
        last.ends_with(
            "chatty.php (\"GET /chatty.php\"): PHP message: message 149 of a chatty script"
        ),
        "{last}"
    );
    let err = s.stderr();
    let lines = err.lines().filter(|l| l.contains("of a chatty script"));
    assert_eq!(lines.count(), 150, "{err}");
}

/// Every line about a FastCGI request names it (method and target as
/// sent), as nginx's "request: ..." does: with a front controller the
/// script alone names no request. A PHP warning (the application's
/// stderr) and a failure (a 504) both.
#[test]
fn fastcgi_lines_name_the_request() {
    let Some((_fpm, s)) = started() else { return };
    assert_eq!(s.get("/warn.php?from=front").text(), "done\n");
    let line = s.wait_stderr_line("careful: something odd");
    assert!(
        line.contains("warn.php (\"GET /warn.php?from=front\"): "),
        "{line}"
    );
    let r = s.get("/slow/nap.php?long=1");
    assert_eq!(r.status, 504, "{}", r.text());
    let line = s.wait_stderr_line("the application was silent for read_timeout");
    assert!(
        line.contains("nap.php (\"GET /slow/nap.php?long=1\"): "),
        "{line}"
    );
}

#[test]
fn scripts_must_exist_beneath_the_root_before_anything_is_sent() {
    let Some((_fpm, s)) = started() else { return };
    // The classic hole: evil.jpg is a file, so evil.jpg/x.php is none.
    let r = s.get("/uploads/evil.jpg/x.php");
    assert_eq!(r.status, 404);
    assert!(!r.text().contains("EVIL"), "{}", r.text());
    let r = s.get("/nothing.php");
    assert_eq!(r.status, 404);
    assert!(
        r.text().contains("404 Not Found"),
        "brisk's page: {}",
        r.text()
    );
    // (The image itself is a static file, its source never run.)
    let r = s.get("/uploads/evil.jpg");
    assert_eq!(r.body, b"<?php echo 'EVIL'; ?>");
    // A symlink that leads out of the root.
    let outside = s.base.path.join("outside.php");
    fs::write(&outside, b"<?php echo 'OUT';").unwrap();
    std::os::unix::fs::symlink(&outside, s.root.join("out.php")).unwrap();
    let r = s.get("/out.php");
    assert_eq!(r.status, 403, "{}", r.text());
    // A path with dot segments: PHP reads REQUEST_URI as sent, and a
    // framework routing on it would not resolve them (`/admin/../x` is
    // under `/admin/` to it, where brisk's rules saw `/x`).
    for target in [
        "/app/../app/index.php",
        "/app/%2e/sub/x",
        "/dir/../form.php",
    ] {
        let r = s.request(
            format!("GET {target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
        );
        assert_eq!(r.status, 400, "{target}: {}", r.text());
    }
}

#[test]
fn index_and_front_controller() {
    let Some((_fpm, s)) = started() else { return };
    assert_eq!(s.get("/dir/").text(), "dir index\n");
    let r = s.get("/app/users/3?x=1");
    assert_eq!(r.text(), "front /app/users/3?x=1 /app/index.php\n");
    // A directory without an index is no file either.
    assert_eq!(
        s.get("/app/sub/").text(),
        "front /app/sub/ /app/index.php\n"
    );
    // A file there is still the static stage's.
    assert_eq!(s.get("/app/style.css").body, b"body{}\n");
}

/// A script's path followed by a `/` alone runs the script with
/// `PATH_INFO=/` (Symfony's `/app_dev.php/`, MediaWiki's
/// `/index.php/`), as nginx's `fastcgi_split_path_info` and Apache's
/// `AcceptPathInfo` do: not the directory index of a directory the script
/// is not (a 404), nor the front controller.
#[test]
fn a_script_followed_by_a_slash_runs_with_path_info_slash() {
    let Some((_fpm, s)) = started() else { return };
    let r = s.get("/env.php/?x=1");
    assert_eq!(r.status, 200, "{}", r.text());
    let body = r.text();
    assert_eq!(var(&body, "SCRIPT_NAME"), "/env.php", "{body}");
    assert_eq!(var(&body, "PATH_INFO"), "/", "{body}");
    assert_eq!(var(&body, "REQUEST_URI"), "/env.php/?x=1", "{body}");
    // Under a front controller's rule: the script named, not the
    // fallback.
    fs::write(
        s.root.join("app/info.php"),
        b"<?php\necho $_SERVER['SCRIPT_NAME'], ' ', $_SERVER['PATH_INFO'] ?? '(unset)', \"\\n\";\n",
    )
    .unwrap();
    assert_eq!(s.get("/app/info.php/").text(), "/app/info.php /\n");
    // A directory whose name ends with `.php` is still a directory.
    fs::create_dir(s.root.join("d.php")).unwrap();
    fs::write(
        s.root.join("d.php/index.php"),
        b"<?php\necho \"d index\\n\";\n",
    )
    .unwrap();
    assert_eq!(s.get("/d.php/").text(), "d index\n");
}

/// A client slow to send its body (a phone uploading a photo, or one
/// that stalls on purpose) holds no php-fpm process meanwhile: the body
/// is held whole before the application is connected to (as nginx's
/// `fastcgi_request_buffering` does by default), so that as many such
/// clients as `pm.max_children` leave the pool free for others.
#[test]
fn a_client_slow_to_send_its_body_holds_no_php_process() {
    let Some(fpm) = Fpm::start_with("pm.max_children = 1\n") else {
        return;
    };
    let s = brisk(&fpm);
    let form = "b=two&c=3";
    let mut slow = s.connect();
    slow.send(
        format!(
            "POST /form.php?a=s HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\
             Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\
             Expect: 100-continue\r\n\r\n",
            form.len()
        )
        .as_bytes(),
    );
    // (Its body is wanted now: the request went as far as it goes
    // before its body is in.)
    assert_eq!(slow.response().status, 100);
    let r = s.get("/form.php?a=1");
    assert_eq!((r.status, r.text()), (200, "a=1 b=- c=-\n".into()));
    slow.send(form.as_bytes());
    let r = slow.response();
    assert_eq!((r.status, r.text()), (200, "a=s b=two c=3\n".into()));
}

/// brisk in front of `fpm` with `top` lines first and `more` lines in
/// its `*.php` rule, for `long.php?mb=N`, N MiB of a known pattern.
fn brisk_long(fpm: &Fpm, top: &str, more: &str) -> Server {
    let mut b = Builder::new();
    b.file(
        "long.php",
        b"<?php\n$piece = str_repeat('0123456789abcdef', 65536);\n\
          for ($i = 0; $i < $_GET['mb']; $i++) { echo $piece; flush(); }\n",
    )
    .file("form.php", b"<?php\necho 'a=', $_GET['a'], \"\\n\";\n");
    b.config(&format!(
        "{top}[[fastcgi]]\npattern = \"*.php\"\nto = \"unix:{}\"\n{more}",
        fpm.sock.display()
    ));
    b.start()
}

/// Whether `body` is `mb` MiB of long.php's pattern.
fn is_long(body: &[u8], mb: usize) -> bool {
    let piece = b"0123456789abcdef".repeat(65536);
    body.len() == mb << 20 && body.chunks(piece.len()).all(|c| c == piece)
}

/// A client that reads its answer slowly, or not at all for a while,
/// holds no php-fpm process meanwhile: what it has not taken is read on
/// ahead of it and held (as nginx's `fastcgi_buffering` does), so that
/// php-fpm's one child answers the next request; the slow client then
/// gets its 40 MiB whole, byte for byte. Over HTTP/1.1 (its socket
/// full) and HTTP/2 (its stream's window spent).
#[test]
fn a_client_slow_to_read_its_answer_holds_no_php_process() {
    let Some(fpm) = Fpm::start_with("pm.max_children = 1\n") else {
        return;
    };
    let s = brisk_long(&fpm, "", "");
    let mut slow = s.connect();
    slow.send(b"GET /long.php?mb=40 HTTP/1.1\r\nHost: t\r\n\r\n");
    slow.read_at_least(1000);
    let r = s.get("/form.php?a=1");
    assert_eq!((r.status, r.text()), (200, "a=1\n".into()));
    let r = slow.response();
    assert_eq!(r.status, 200);
    assert!(is_long(&r.body, 40), "{} bytes", r.body.len());

    // (The stream's window is HTTP/2's default, 65,535 bytes, and not
    // given back before the other request is answered.)
    #[cfg(feature = "http2")]
    {
        let mut h2 = common::h2::H2::connect(s.addr(), &[], 1 << 30);
        let answer = h2.slow_get("/long.php?mb=40", || {
            let r = s.get("/form.php?a=2");
            assert_eq!((r.status, r.text()), (200, "a=2\n".into()));
        });
        assert_eq!(answer.status(), "200");
        assert!(is_long(&answer.body, 40), "{} bytes", answer.body.len());
    }
    let log = s.stderr();
    assert!(!log.contains("cannot hold"), "{log}");
}

/// With `buffer_answer` at a size, no more than that is held ahead of a
/// slow client; the answer still comes whole. A `temp_dir` that cannot
/// take the answer (here: none) is said once, and the answer comes
/// whole all the same, as the client takes it.
#[test]
fn an_answer_held_ahead_is_bounded_and_never_lost() {
    let Some(fpm) = Fpm::start() else { return };
    let dir = TempDir::new("fcgi-tmp");
    let temp_dir = format!("temp_dir = \"{}\"\n", dir.path.display());
    let first = brisk_long(&fpm, &temp_dir, "buffer_answer = \"1MiB\"\n");
    let r = held_one_mib(&first, &dir.path, "/long.php?mb=20");
    assert!(is_long(&r.body, 20), "{} bytes", r.body.len());

    // (Gone once brisk serves, its sandbox made: no unnamed file can be
    // made there.)
    drop(first);
    let s = brisk_long(&fpm, &temp_dir, "");
    assert_eq!(s.get("/form.php?a=1").text(), "a=1\n");
    fs::remove_dir(&dir.path).unwrap();
    let mut slow = s.connect();
    slow.send(b"GET /long.php?mb=20 HTTP/1.1\r\nHost: t\r\n\r\n");
    slow.read_at_least(1000);
    s.wait_stderr_line("cannot hold the answer ahead of the client");
    let r = slow.response();
    assert!(is_long(&r.body, 20), "{} bytes", r.body.len());
}

/// A front controller for every path (`path = "/"` with a `fallback`)
/// leaves the URLs of the `[[cgi]]` rules to them, as nginx's `location
/// /cgi-bin/` wins over `location /`: `/cgi-bin/hello` is no file
/// beneath the root, but it is the CGI rule's (whose stage comes after
/// FastCGI's), a missing script there its 404.
#[test]
fn a_front_controller_leaves_the_cgi_rules_urls_to_them() {
    use std::os::unix::fs::PermissionsExt as _;
    let Some(fpm) = Fpm::start() else { return };
    let mut b = Builder::new();
    let hello = b.base().join("cgi-bin/hello");
    write_file(
        &hello,
        b"#!/bin/sh\nprintf 'Content-Type: text/plain\\r\\n\\r\\ncgi hello\\n'\n",
    );
    fs::set_permissions(&hello, fs::Permissions::from_mode(0o755)).unwrap();
    b.file(
        "index.php",
        b"<?php\necho 'front ', $_SERVER['REQUEST_URI'], \"\\n\";\n",
    );
    b.config(&format!(
        "[[cgi]]\nurl = \"/cgi-bin/\"\ndir = \"cgi-bin\"\n\n\
         [[fastcgi]]\npath = \"/\"\nto = \"unix:{}\"\nsplit_path = \".php\"\n\
         index = \"index.php\"\nfallback = \"/index.php\"\n",
        fpm.sock.display()
    ));
    let s = b.start();
    assert_eq!(s.get("/cgi-bin/hello").text(), "cgi hello\n");
    assert_eq!(s.get("/cgi-bin/hello/x?y").text(), "cgi hello\n");
    assert_eq!(s.get("/cgi-bin/missing").status, 404);
    assert_eq!(s.get("/cgi-bin/nope.php").status, 404);
    // Every other path that is no file is the front controller's.
    assert_eq!(s.get("/users/3?x=1").text(), "front /users/3?x=1\n");
    assert_eq!(s.get("/cgi-binary").text(), "front /cgi-binary\n");
}

#[test]
fn two_hundred_requests_at_once() {
    let Some((_fpm, s)) = started() else { return };
    let addr = s.addr();
    // (Four PHP processes: most requests wait in php-fpm's backlog; each
    // client gives up after IO_TIMEOUT, so the test ends by itself.)
    let answers: Vec<_> = (0..200)
        .map(|i| {
            thread::spawn(move || {
                let mut c = Client::connect(addr);
                // Every other one a POST whose body streams to PHP.
                let form = format!("b={}&c={i}", "x".repeat(20_000));
                let raw = match i % 2 {
                    0 => format!(
                        "GET /env.php?i={i} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
                    ),
                    _ => format!(
                        "POST /form.php?a={i} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\
                         Content-Type: application/x-www-form-urlencoded\r\n\
                         Content-Length: {}\r\n\r\n{form}",
                        form.len()
                    ),
                };
                c.send(raw.as_bytes());
                (i, c.response())
            })
        })
        .collect();
    for a in answers {
        let (i, r) = a.join().unwrap();
        assert_eq!(r.status, 200, "{i}: {}", r.text());
        match i % 2 {
            0 => assert_eq!(var(&r.text(), "QUERY_STRING"), format!("i={i}")),
            _ => assert_eq!(r.text(), format!("a={i} b={} c={i}\n", "x".repeat(20_000))),
        }
    }
    // (And the server goes on as before.)
    assert_eq!(s.get("/form.php?a=after").text(), "a=after b=- c=-\n");
}

/// A unix socket in front of `fpm`'s that passes bytes both ways and
/// counts the connections made to it.
fn counting_relay(fpm: &Fpm) -> (PathBuf, Arc<AtomicUsize>) {
    let path = fpm.dir.path.join("relay.sock");
    let listener = UnixListener::bind(&path).unwrap();
    let count = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&count);
    let to = fpm.sock.clone();
    thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(client) = conn else { return };
            counted.fetch_add(1, Ordering::SeqCst);
            let server = UnixStream::connect(&to).unwrap();
            let pipe = |mut from: UnixStream, mut to: UnixStream| {
                thread::spawn(move || {
                    let _ = std::io::copy(&mut from, &mut to);
                    let _ = to.shutdown(std::net::Shutdown::Write);
                })
            };
            pipe(client.try_clone().unwrap(), server.try_clone().unwrap());
            pipe(server, client);
        }
    });
    (path, count)
}

#[test]
fn kept_connections_carry_request_after_request() {
    let Some(fpm) = Fpm::start() else { return };
    let (relay, connections) = counting_relay(&fpm);
    let s = brisk_to(&format!("unix:{}", relay.display()), 1);
    for i in 0..20 {
        let r = s.get(&format!("/form.php?a={i}"));
        assert_eq!(r.text(), format!("a={i} b=- c=-\n"));
    }
    // One connection (FCGI_KEEP_CONN), kept between the requests.
    assert_eq!(connections.load(Ordering::SeqCst), 1);
    drop(s);
    // Without keepalive, one per request.
    let s = brisk_to(&format!("unix:{}", relay.display()), 0);
    for _ in 0..3 {
        assert_eq!(s.get("/form.php").status, 200);
    }
    assert_eq!(connections.load(Ordering::SeqCst), 4);
}

#[test]
fn an_application_silent_for_read_timeout_is_a_504() {
    let Some((_fpm, s)) = started() else { return };
    let r = s.get("/slow/nap.php");
    assert_eq!(r.status, 504, "{}", r.text());
    s.wait_stderr_line("the application was silent for read_timeout");
}

#[test]
fn php_fpm_stopped_is_a_502() {
    let Some((mut fpm, s)) = started() else {
        return;
    };
    assert_eq!(s.get("/form.php").status, 200);
    fpm.stop();
    let r = s.get("/form.php");
    assert_eq!(r.status, 502, "{}", r.text());
    // (Kept connections to the stopped server are not reused either.)
    assert_eq!(s.get("/form.php").status, 502);
}

#[cfg(feature = "http2")]
#[test]
fn over_h2c() {
    let Some((_fpm, s)) = started() else { return };
    let mut h2 = common::h2::H2::connect(s.addr(), &[], 1 << 24);
    let get = h2.get("/env.php/p?q=1", &[]);
    let form = b"b=h2&c=yes";
    let post = h2.request(
        "POST",
        "/form.php?a=2",
        &[("content-type", "application/x-www-form-urlencoded")],
        Some(form),
    );
    let answers = h2.answers(&[get, post]);
    assert_eq!(answers[0].status(), "200");
    let body = String::from_utf8(answers[0].body.clone()).unwrap();
    assert_eq!(var(&body, "PATH_INFO"), "/p");
    assert_eq!(var(&body, "SERVER_PROTOCOL"), "HTTP/2.0");
    assert_eq!(answers[1].status(), "200");
    assert_eq!(answers[1].body, b"a=2 b=h2 c=yes\n");
}

/// A unix socket whose server takes connections and never answers,
/// holding them open; with how many it took.
fn silent_server(dir: &Path) -> (PathBuf, Arc<AtomicUsize>) {
    let path = dir.join("silent.sock");
    let listener = UnixListener::bind(&path).unwrap();
    let count = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&count);
    thread::spawn(move || {
        let mut held = Vec::new();
        for conn in listener.incoming() {
            let Ok(conn) = conn else { return };
            counted.fetch_add(1, Ordering::SeqCst);
            held.push(conn);
        }
    });
    (path, count)
}

/// Two php-fpm pools, `a` and `b` (each says its name: `pool.php`),
/// and brisk in front with a rule per case, each its own servers: `/rr/`
/// both in turn; `/spare/` a TCP port that refuses, then `a`; `/none/`
/// a socket nobody listens on (refused at once) and that port (refused
/// later); `/silent/` a server that never answers (`read_timeout` 1 s:
/// long enough for `a` on a busy machine), then `a`. The access log
/// says which server answered.
struct Pools {
    a: Fpm,
    _b: Fpm,
    s: Server,
    /// The port that refuses.
    refused: std::net::SocketAddr,
    /// How many connections the silent server took.
    silent: Arc<AtomicUsize>,
}

fn pools() -> Option<Pools> {
    let a = Fpm::start_with("env[POOL] = a\n")?;
    let b = Fpm::start_with("env[POOL] = b\n")?;
    let refused = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let (silent, count) = silent_server(&a.dir.path);
    let nobody = a.dir.path.join("nobody.sock");
    let (ua, ub) = (a.sock.display(), b.sock.display());
    let pool = b"<?php\necho getenv('POOL'), \"\\n\";\n";
    let mut b_ = Builder::new();
    b_.file("rr/pool.php", pool)
        .file("spare/pool.php", pool)
        .file("none/pool.php", pool)
        .file("silent/pool.php", pool)
        .file("a.txt", b"AAAA")
        .access_log_from_config();
    b_.config(&format!(
        "[log]\naccess = \"access.log\"\n\
         format = '$request_uri $status $upstream_addr $upstream_status $upstream_header_time \
         $upstream_response_time'\n\n\
         [[fastcgi]]\npath = \"/rr/\"\nto = [\"unix:{ua}\", \"unix:{ub}\"]\n\n\
         [[fastcgi]]\npath = \"/spare/\"\nto = [\"{refused}\", \"unix:{ua}\"]\n\n\
         [[fastcgi]]\npath = \"/none/\"\nto = [\"unix:{nobody}\", \"{refused}\"]\n\n\
         [[fastcgi]]\npath = \"/silent/\"\nto = [\"unix:{silent}\", \"unix:{ua}\"]\n\
         read_timeout = \"1s\"\n",
        nobody = nobody.display(),
        silent = silent.display(),
    ));
    let s = b_.start();
    Some(Pools {
        a,
        _b: b,
        s,
        refused,
        silent: count,
    })
}

#[test]
fn several_servers_take_requests_in_turn() {
    let Some(p) = pools() else { return };
    let got: Vec<String> = (0..6).map(|_| p.s.get("/rr/pool.php").text()).collect();
    assert_eq!(got, ["a\n", "b\n", "a\n", "b\n", "a\n", "b\n"]);
}

#[test]
fn a_server_that_refuses_is_skipped_for_fail_timeout() {
    let Some(p) = pools() else { return };
    // The first goes to the refusing port, then on to `a` (nothing of
    // it went); that port is then down for fail_timeout (10 s): the
    // next ones go straight to `a`.
    for _ in 0..4 {
        let r = p.s.get("/spare/pool.php");
        assert_eq!((r.status, r.text().as_str()), (200, "a\n"));
    }
    let refused = p.refused.to_string();
    p.s.wait_stderr_line(&format!("{refused}: cannot connect"));
    let err = p.s.stderr();
    let tries = err.lines().filter(|l| l.contains(&refused)).count();
    assert_eq!(tries, 1, "tried once only:\n{err}");
    // The access log names the server that answered.
    let line = p.s.wait_access_line(|l| l.starts_with(b"/spare/pool.php "));
    let want = format!("/spare/pool.php 200 unix:{} 200 0.", p.a.sock.display());
    let line = String::from_utf8(line).unwrap();
    assert!(line.starts_with(&want), "{line:?}, not {want:?}…");
}

#[test]
fn none_reachable_is_a_502_then_all_down_a_503() {
    let Some(p) = pools() else { return };
    let r = p.s.get("/none/pool.php");
    assert_eq!(r.status, 502, "{}", r.text());
    let r = p.s.get("/none/pool.php");
    assert_eq!(r.status, 503, "{}", r.text());
    p.s.wait_stderr_line("no live upstreams");
    // (No upstream answered: the log says so.)
    let line =
        p.s.wait_access_line(|l| l.starts_with(b"/none/pool.php 503"));
    assert_eq!(line, b"/none/pool.php 503 - - - -");
}

#[test]
fn a_server_silent_for_read_timeout_is_a_504_and_skipped_after() {
    let Some(p) = pools() else { return };
    // (The request went: it is not sent again.)
    let r = p.s.get("/silent/pool.php");
    assert_eq!(r.status, 504, "{}", r.text());
    for _ in 0..3 {
        assert_eq!(p.s.get("/silent/pool.php").text(), "a\n");
    }
    assert_eq!(p.silent.load(Ordering::SeqCst), 1);
}

#[test]
fn the_access_log_names_the_application_server() {
    let Some(p) = pools() else { return };
    assert_eq!(p.s.get("/rr/pool.php").status, 200);
    assert_eq!(p.s.get("/a.txt").status, 200);
    let line = |path: &str| {
        let l = p.s.wait_access_line(|l| l.starts_with(path.as_bytes()));
        String::from_utf8(l).unwrap()
    };
    let got = line("/rr/pool.php ");
    let want = format!("/rr/pool.php 200 unix:{} 200 0.", p.a.sock.display());
    assert!(got.starts_with(&want), "{got:?}, not {want:?}…");
    // (Then the time to the answer's end: no less than to its head.)
    let times: Vec<f64> = got.split(' ').skip(4).map(|t| t.parse().unwrap()).collect();
    assert!(times.len() == 2 && times[0] <= times[1], "{got:?}");
    assert_eq!(line("/a.txt "), "/a.txt 200 - - - -");
}

#[cfg(feature = "http2")]
#[test]
fn over_h2c_a_request_goes_on_to_the_next_server() {
    let Some(p) = pools() else { return };
    let mut h2 = common::h2::H2::connect(p.s.addr(), &[], 1 << 20);
    // (Each stream its own request: the first goes to the refusing port
    // and on to `a` on a new connection; the others straight to `a`.)
    let ids: Vec<u32> = (0..3).map(|_| h2.get("/spare/pool.php", &[])).collect();
    for a in h2.answers(&ids) {
        assert_eq!(a.status(), "200");
        assert_eq!(a.body, b"a\n");
    }
    let rr: Vec<u32> = (0..2).map(|_| h2.get("/rr/pool.php", &[])).collect();
    let mut got: Vec<Vec<u8>> = h2.answers(&rr).into_iter().map(|a| a.body).collect();
    got.sort();
    assert_eq!(got, [b"a\n".to_vec(), b"b\n".to_vec()]);
}

#[test]
fn a_kept_connection_whose_php_process_ended_sends_a_get_again() {
    // Each PHP process ends after one request (pm.max_requests = 1), so
    // a kept connection is closed, or about to be, when the next request
    // takes it: a GET (idempotent, no body) is sent again on a new one.
    // (A POST is not: it could have run. Its kept connection is looked
    // at before reuse, which cannot see a close that comes a moment
    // later; nginx's `keepalive` has the same race.)
    let Some(fpm) = Fpm::start_with("pm.max_requests = 1\n") else {
        return;
    };
    let s = brisk_to(&format!("unix:{}", fpm.sock.display()), 1);
    for i in 0..8 {
        let r = s.get(&format!("/form.php?a={i}"));
        assert_eq!((r.status, r.text()), (200, format!("a={i} b=- c=-\n")));
    }
    // A warning: the client got its answer, and php-fpm ends its
    // processes after pm.max_requests by design.
    let line = s.wait_stderr_line("sent again on a new connection");
    assert!(line.contains(" [warn] fastcgi "), "{line}");
}

/// A unix socket brisk's user may not write to (Debian's php-fpm makes
/// its socket `www-data:www-data 0660`; brisk started as root serves as
/// `nobody`): a 502 whose error line says what to change, not only
/// `Permission denied`.
#[test]
fn a_socket_brisks_user_may_not_write_to_says_what_to_change() {
    use std::os::unix::fs::PermissionsExt as _;
    if brisk::sys::privileges::euid() != 0
        || brisk::sys::privileges::lookup_user("nobody")
            .ok()
            .flatten()
            .is_none()
    {
        skip("needs root and a nobody user");
        return;
    }
    let dir = TempDir::new("fcgi-perm");
    fs::set_permissions(&dir.path, fs::Permissions::from_mode(0o755)).unwrap();
    let sock = dir.path.join("php-fpm.sock");
    let _listener = UnixListener::bind(&sock).unwrap();
    fs::set_permissions(&sock, fs::Permissions::from_mode(0o600)).unwrap();
    let mut b = Builder::new();
    b.file("x.php", b"<?php echo 'x';\n");
    b.config(&format!(
        "user = \"nobody\"\n\n[[fastcgi]]\npattern = \"*.php\"\nto = \"unix:{}\"\n",
        sock.display()
    ));
    let s = b.start();
    let r = s.get("/x.php");
    assert_eq!(r.status, 502, "{}", r.text());
    // (The line may come a moment after the answer.)
    s.wait_stderr_line(&format!(
        "fastcgi {}/x.php (\"GET /x.php\"): unix:{}: cannot connect: Permission denied (os error 13): the \
         user brisk serves as may not write to the socket; let it (php-fpm: listen.owner, \
         listen.group and listen.mode in the pool), or serve as a user or group that may \
         (user = \"www-data\"); 502",
        s.root.display(),
        sock.display()
    ));
}

/// A unix socket whose listen queue is full (php-fpm's children all
/// busy and `listen.backlog` connections waiting): a 502 whose error line
/// says so and what to raise, not only `Resource temporarily
/// unavailable`.
#[test]
fn a_socket_whose_queue_is_full_says_so() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = TempDir::new("fcgi-full");
    fs::set_permissions(&dir.path, fs::Permissions::from_mode(0o755)).unwrap();
    let sock = dir.path.join("php-fpm.sock");
    let _listener = full_listener(&sock);
    fs::set_permissions(&sock, fs::Permissions::from_mode(0o666)).unwrap();
    let mut b = Builder::new();
    b.file("x.php", b"<?php echo 'x';\n");
    b.config(&format!(
        "[[fastcgi]]\npattern = \"*.php\"\nto = \"unix:{}\"\n",
        sock.display()
    ));
    let s = b.start();
    let r = s.get("/x.php");
    assert_eq!(r.status, 502, "{}", r.text());
    s.wait_stderr_line(&format!(
        "fastcgi {}/x.php (\"GET /x.php\"): unix:{}: cannot connect: Resource temporarily \
         unavailable (os error 11): its listen queue is full: every process of the application \
         is busy and as many connections wait as its backlog holds (php-fpm: pm.max_children, \
         listen.backlog; the system's net.core.somaxconn); 502",
        s.root.display(),
        sock.display()
    ));
}

/// A unix socket at `path` listening with a backlog of 0, never
/// accepting, its queue filled (a non-blocking connect to it fails with
/// `EAGAIN`); with the connections that fill it.
fn full_listener(path: &Path) -> (UnixListener, Vec<std::os::fd::OwnedFd>) {
    use std::os::fd::{FromRawFd, OwnedFd};
    let listener = UnixListener::bind(path).unwrap();
    // SAFETY: plain calls on a descriptor this test owns.
    assert_eq!(
        unsafe { libc::listen(std::os::fd::AsRawFd::as_raw_fd(&listener), 0) },
        0
    );
    let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
    for (d, s) in addr
        .sun_path
        .iter_mut()
        .zip(path.as_os_str().as_encoded_bytes())
    {
        *d = *s as libc::c_char;
    }
    let mut held = Vec::new();
    for _ in 0..64 {
        // SAFETY: a new socket, connected to a valid address of its size.
        let fd = unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_NONBLOCK, 0) };
        assert!(fd >= 0);
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let len = std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t;
        let r = unsafe {
            libc::connect(
                std::os::fd::AsRawFd::as_raw_fd(&fd),
                &addr as *const _ as *const libc::sockaddr,
                len,
            )
        };
        if r != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EAGAIN) {
            return (listener, held);
        }
        held.push(fd);
    }
    panic!("the queue never filled");
}

/// The start-up hint that `/` answers 403 (no index.html, no listings)
/// is not given when a FastCGI rule answers `/`: its `index.php` there,
/// or a front controller's `fallback`. (Nothing is sent to php-fpm.)
#[test]
fn no_403_hint_at_start_when_php_answers_the_front_page() {
    let hint = "no index.html in";
    for (rule, index_php) in [
        ("pattern = \"*.php\"\nindex = \"index.php\"\n", true),
        (
            "path = \"/\"\nsplit_path = \".php\"\nfallback = \"/app.php\"\n",
            false,
        ),
        ("pattern = \"*.php\"\nindex = \"index.php\"\n", false),
    ] {
        let mut b = Builder::new();
        b.file("app.php", b"<?php\n");
        if index_php {
            b.file("index.php", b"<?php\n");
        }
        b.config(&format!(
            "[[fastcgi]]\n{rule}to = \"unix:/nonexistent/php-fpm.sock\"\n"
        ));
        let s = b.start();
        wait_until("the started line", || s.stderr().contains("] started "));
        let err = s.stderr();
        // The last: an index.php named but missing, so / is a 403.
        let given = rule.starts_with("pattern") && !index_php;
        assert_eq!(err.contains(hint), given, "{rule}: {err}");
    }
}
