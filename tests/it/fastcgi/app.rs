//! A small PHP application walked as a user would: `notes/index.php`
//! (notes and attachments kept as files, no database) behind one front
//! controller (`fallback`) with pretty URLs, a login kept in the session
//! cookie, forms, a multipart upload, redirects after each POST and its
//! own 404 page. The client keeps cookies and follows redirects, as a
//! browser does; each step's page is checked.

use std::fs;
use std::net::SocketAddr;

use super::Fpm;
use crate::common::*;

/// A client that keeps the cookies it is given and follows redirects.
struct Browser {
    addr: SocketAddr,
    /// Name and value of each cookie, in the order they came.
    jar: Vec<(String, String)>,
    /// The redirects the last request went through: status, `Location`.
    hops: Vec<(u16, String)>,
}

impl Browser {
    fn new(addr: SocketAddr) -> Browser {
        Browser {
            addr,
            jar: Vec::new(),
            hops: Vec::new(),
        }
    }

    fn cookie(&self, name: &str) -> Option<&str> {
        let found = self.jar.iter().find(|(n, _)| n == name);
        found.map(|(_, v)| v.as_str())
    }

    fn get(&mut self, path: &str) -> Response {
        self.go("GET", path, None)
    }

    fn post_form(&mut self, path: &str, fields: &[(&str, &str)]) -> Response {
        let body: Vec<String> = fields
            .iter()
            .map(|(n, v)| format!("{}={}", encode(n), encode(v)))
            .collect();
        let form = "application/x-www-form-urlencoded".to_string();
        self.go("POST", path, Some((form, body.join("&").into_bytes())))
    }

    fn post_file(&mut self, path: &str, field: &str, name: &str, data: &[u8]) -> Response {
        let mut body = format!(
            "--b0undary\r\nContent-Disposition: form-data; name=\"{field}\"; \
             filename=\"{name}\"\r\nContent-Type: application/octet-stream\r\n\r\n"
        )
        .into_bytes();
        body.extend_from_slice(data);
        body.extend_from_slice(b"\r\n--b0undary--\r\n");
        let kind = "multipart/form-data; boundary=b0undary".to_string();
        self.go("POST", path, Some((kind, body)))
    }

    /// `method path` with `body` (its type and bytes), then the
    /// redirects it leads to (a 303 as a GET), five at most.
    fn go(&mut self, method: &str, path: &str, body: Option<(String, Vec<u8>)>) -> Response {
        self.hops.clear();
        let (mut method, mut path, mut body) = (method.to_string(), path.to_string(), body);
        loop {
            let r = self.once(&method, &path, body.as_ref());
            for (name, value) in &r.headers {
                if name.eq_ignore_ascii_case("set-cookie") {
                    let pair = value.split(';').next().unwrap();
                    let (n, v) = pair.split_once('=').expect("a cookie");
                    self.jar.retain(|(have, _)| have != n);
                    self.jar.push((n.to_string(), v.to_string()));
                }
            }
            if !matches!(r.status, 301 | 302 | 303 | 307 | 308) || self.hops.len() == 5 {
                return r;
            }
            let to = r.header("Location").expect("a redirect's Location");
            self.hops.push((r.status, to.to_string()));
            path = match to.strip_prefix("http://notes.test") {
                Some(p) => p.to_string(),
                None => to.to_string(),
            };
            if r.status == 303 {
                method = "GET".into();
                body = None;
            }
        }
    }

    fn once(&self, method: &str, path: &str, body: Option<&(String, Vec<u8>)>) -> Response {
        let mut head =
            format!("{method} {path} HTTP/1.1\r\nHost: notes.test\r\nConnection: close\r\n");
        if !self.jar.is_empty() {
            let pairs: Vec<String> = self.jar.iter().map(|(n, v)| format!("{n}={v}")).collect();
            head.push_str(&format!("Cookie: {}\r\n", pairs.join("; ")));
        }
        let mut raw = match body {
            Some((kind, b)) => format!(
                "{head}Content-Type: {kind}\r\nContent-Length: {}\r\n\r\n",
                b.len()
            )
            .into_bytes(),
            None => format!("{head}\r\n").into_bytes(),
        };
        if let Some((_, b)) = body {
            raw.extend_from_slice(b);
        }
        let mut c = Client::connect(self.addr);
        c.send(&raw);
        c.response()
    }
}

/// `s` as a form field (`application/x-www-form-urlencoded`).
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            b' ' => "+".into(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[test]
fn a_notes_application_walked_with_a_browser() {
    let Some(fpm) = Fpm::start() else { return };
    let data = fpm.dir.path.join("notes");
    fs::create_dir_all(data.join("files")).unwrap();
    let mut b = Builder::new();
    b.file("index.php", include_bytes!("notes/index.php"))
        .file("style.css", include_bytes!("notes/style.css"));
    b.config(&format!(
        "[[fastcgi]]\npath = \"/\"\nto = \"unix:{}\"\nindex = \"index.php\"\n\
         split_path = \".php\"\nfallback = \"/index.php\"\n\
         env = {{ NOTES_DIR = \"{}\" }}\n",
        fpm.sock.display(),
        data.display()
    ));
    let s = b.start();
    let mut web = Browser::new(s.addr());

    // The home page asks to log in, and a session starts (a cookie).
    let r = web.get("/");
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(
        r.text()
            .contains("<a href=/login>Log in</a> to write notes"),
        "{}",
        r.text()
    );
    let first_session = web
        .cookie("PHPSESSID")
        .expect("a session cookie")
        .to_string();
    // Its stylesheet is a file: brisk's, PHP never asked.
    let r = web.get("/style.css");
    assert_eq!(r.body, include_bytes!("notes/style.css"));
    assert_eq!(r.header("Content-Type"), Some("text/css; charset=utf-8"));

    // Writing before logging in leads to the login form.
    let r = web.post_form("/notes", &[("text", "too early")]);
    assert_eq!(web.hops, [(303, "/login".to_string())]);
    assert_eq!(r.status, 200);
    assert!(r.text().contains("<title>Log in</title>"), "{}", r.text());

    // A wrong password, then the right one: a new session id, and home.
    let r = web.post_form("/login", &[("user", "ada"), ("password", "guess")]);
    assert_eq!(r.status, 403);
    assert!(r.text().contains("Wrong name or password."), "{}", r.text());
    let r = web.post_form("/login", &[("user", "ada"), ("password", "open sesame")]);
    assert_eq!(web.hops, [(303, "/".to_string())]);
    assert!(r.text().contains("<p>Hello, ada</p>"), "{}", r.text());
    let session = web.cookie("PHPSESSID").unwrap().to_string();
    assert_ne!(session, first_session, "a new id once logged in");

    // Two notes, each shown after its POST at its own address.
    let r = web.post_form("/notes", &[("text", "Milk & <eggs>")]);
    assert_eq!(web.hops, [(303, "/notes/1".to_string())]);
    assert!(r.text().contains("<title>Note 1</title>"), "{}", r.text());
    assert!(
        r.text()
            .contains("<p>Milk &amp; &lt;eggs&gt;</p><p>by ada</p>"),
        "{}",
        r.text()
    );
    let r = web.post_form("/notes", &[("text", "call Bob")]);
    assert_eq!(web.hops, [(303, "/notes/2".to_string())]);
    assert!(r.text().contains("<p>call Bob</p>"), "{}", r.text());
    let r = web.get("/");
    let home = r.text();
    assert!(home.contains("<li><a href=/notes/1>Milk &amp; &lt;eggs&gt;</a> by ada</li>\n<li><a href=/notes/2>call Bob</a> by ada</li>"), "{home}");
    let stored = fs::read_to_string(data.join("notes.json")).unwrap();
    assert!(stored.contains("call Bob"), "{stored}");

    // The application's own 404s: a note that is not there, a page that
    // is not there (the front controller takes every path).
    let r = web.get("/notes/9");
    assert_eq!(r.status, 404);
    assert!(
        r.text().contains("<p>There is no note 9.</p>"),
        "{}",
        r.text()
    );
    let r = web.get("/no/such/page?x=1");
    assert_eq!(r.status, 404);
    assert!(
        r.text().contains("<p>No page at /no/such/page.</p>"),
        "{}",
        r.text()
    );

    // An upload, then the file as stored.
    let file: Vec<u8> = (0..200_000u32).map(|i| (i * 31 % 253) as u8).collect();
    let r = web.post_file("/upload", "attachment", "report.bin", &file);
    assert_eq!(web.hops, [(303, "/files/report.bin".to_string())]);
    assert_eq!(r.status, 200);
    assert_eq!(r.header("Content-Type"), Some("application/octet-stream"));
    assert!(r.body == file, "the file as it was sent");
    assert_eq!(fs::read(data.join("files/report.bin")).unwrap(), file);
    assert_eq!(r.header("X-Sha256").map(str::len), Some(64));

    // Logging out ends the session: home asks to log in again.
    let r = web.get("/logout");
    assert_eq!(web.hops, [(303, "/".to_string())]);
    assert!(
        r.text().contains("Log in</a> to write notes"),
        "{}",
        r.text()
    );
    // Another visitor, with no cookie, can read a note and write none.
    let mut other = Browser::new(s.addr());
    assert!(other.get("/notes/2").text().contains("<p>call Bob</p>"));
    other.post_form("/notes", &[("text", "spam")]);
    assert_eq!(other.hops, [(303, "/login".to_string())]);
    assert!(!fs::read_to_string(data.join("notes.json"))
        .unwrap()
        .contains("spam"));
}
