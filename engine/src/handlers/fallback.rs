//! What the static handler answers instead of its own 404 (or 403 for a
//! directory without an index): `[static] try_files` / `spa` (another
//! file, 200, as nginx's `try_files $uri /index.html`) and `[errors]`
//! pages (a file of the site with the error's status).

use crate::ascii::IgnoreCase;
use std::sync::atomic::Ordering;

use super::file_cache::FileCache;
use super::static_files::{self, StaticFiles};
use super::{Body, Plan, Refusal, Scratch};
use crate::config::rules::ErrorPage;
use crate::config::Level;
use crate::http::request::OwnedRequest;
use crate::http::{Method, Status};
use crate::log::Logger;

/// Answers `plan` (the static handler's) again from the first
/// `try_files` path that is a file, when it is a 404 for a missing file
/// or a 403 for a directory without an index, to a GET or HEAD whose path
/// does not end in one of `fallback_exclude`'s extensions. Conditionals
/// and ranges apply to the file served, as to any. A path `guarded`
/// refuses (one an `[[access]]` rule refuses the client, or an `[[auth]]`
/// rule guards with a login the request did not give) is passed over:
/// the rules judge the file served, whatever path named it, as they do
/// after a rewrite.
pub fn try_files(
    files: &StaticFiles,
    req: &OwnedRequest,
    s: &mut Scratch,
    cache: &mut FileCache,
    plan: Plan,
    guarded: &dyn Fn(&[u8]) -> bool,
) -> Plan {
    let st = &files.site().static_files;
    let missing = matches!(
        (plan.status, s.why),
        (
            Status::NOT_FOUND,
            Some(Refusal::Lookup(libc::ENOENT | libc::ENOTDIR) | Refusal::OwnFile)
        ) | (Status::FORBIDDEN, Some(Refusal::NoIndex))
    );
    if !missing || !matches!(req.method(), Method::Get | Method::Head) {
        return plan;
    }
    let Ok(uri) = req.path() else { return plan };
    if let Some(ext) = crate::http::mime::extension(uri) {
        if st
            .fallback_exclude
            .iter()
            .any(|e| e.as_bytes().eq_ignore_case(ext))
        {
            return plan;
        }
    }
    for candidate in &st.try_files {
        s.path.clear();
        let mut rest = candidate.as_bytes();
        while let Some(i) = rest.windows(4).position(|w| w == b"$uri") {
            s.path.extend_from_slice(&rest[..i]);
            s.path.extend_from_slice(uri);
            rest = &rest[i + 4..];
        }
        s.path.extend_from_slice(rest);
        if st.dotfiles.refuses(&s.path) || guarded(&s.path) {
            continue;
        }
        s.rel.clear();
        s.rel
            .extend_from_slice(s.path.strip_prefix(b"/").unwrap_or(&s.path));
        if let Some(plan) = static_files::serve_found(files, req, s, cache) {
            return plan;
        }
    }
    // (Nothing to fall back to: the first answer, as it was.)
    s.path.clear();
    s.path.extend_from_slice(uri);
    plan
}

/// The site's own page (of `pages`, its `[errors]`) that replaces
/// `plan`'s body, if `plan` is a built-in error page.
pub fn page_for<'a>(pages: &'a [ErrorPage], plan: &Plan) -> Option<&'a ErrorPage> {
    if plan.status.0 < 400 || !matches!(plan.body, Body::Static(_)) {
        return None;
    }
    pages.iter().find(|p| p.status == plan.status.0)
}

/// Makes `plan`, a built-in error page, the site's own page for its
/// status if `[errors]` names one that can be opened: same status and
/// header lines, the file's `Content-Type`, and `Cache-Control: no-store`
/// so that no cache keeps the page (nor takes it for the resource). A
/// page that cannot be served leaves the built-in one, and is logged
/// once. The page is a file, never routed: it cannot fail into itself.
pub fn error_page(
    files: &StaticFiles,
    pages: &[ErrorPage],
    cache: &mut FileCache,
    plan: &mut Plan,
    s: &mut Scratch,
    log: &mut Logger,
) {
    let Some(page) = page_for(pages, plan) else {
        return;
    };
    let found = static_files::open_page(files, cache, page.page.as_bytes());
    let (src, len) = match found {
        Ok(found) => found,
        Err(why) => {
            if !page.warned.swap(true, Ordering::Relaxed) {
                log.log(
                    Level::Warn,
                    format_args!(
                        "errors.{}: {:?} cannot be served ({why}); the built-in page is sent instead (logged once)",
                        page.status, page.page
                    ),
                );
            }
            return;
        }
    };
    // The page's type replaces the built-in page's, whatever that was
    // (the text/plain of a WebSocket handshake's 501 went beside it:
    // two Content-Type fields, RFC 9110 §5.3 allows one).
    static_files::remove_field(&mut s.headers, 0, "Content-Type");
    s.header(
        "Content-Type",
        files.content_type(page.page.as_bytes()).as_bytes(),
    );
    s.header("Cache-Control", b"no-store");
    plan.body = Body::File {
        src,
        offset: 0,
        len,
    };
}
