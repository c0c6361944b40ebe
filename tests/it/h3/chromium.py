"""Chromium (headless, through Playwright) for tests/it/h3.rs: loads a page
over HTTP/3 and says which protocol each resource came by.

Reads one JSON document on stdin:
  {"port": N, "spki": BASE64 (SHA-256 of the certificate's public key,
   trusted for 127.0.0.1), "path": "/page.html"}
forces QUIC for https://127.0.0.1:port (--origin-to-force-quic-on), waits
(bounded) for the page's title to become "done" or to start with "bad",
and prints:
  {"title": T, "navigation": PROTO, "resources": [PROTO, ...]}
(Resource Timing's nextHopProtocol: "h3" for HTTP/3).
Exit status 2 when Playwright or Chromium is missing (the test then
skips, loudly).
"""

import asyncio
import json
import os
import sys

try:
    from playwright.async_api import async_playwright
except ImportError:
    sys.exit(2)

CHROMIUM = "/usr/bin/chromium"


async def main(spec):
    origin = f"127.0.0.1:{spec['port']}"
    async with async_playwright() as p:
        browser = await p.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                f"--origin-to-force-quic-on={origin}",
                f"--ignore-certificate-errors-spki-list={spec['spki']}",
                "--no-sandbox",
            ],
        )
        page = await browser.new_page()
        await page.goto(f"https://{origin}{spec['path']}")
        await page.wait_for_function(
            "document.title == 'done' || document.title.startsWith('bad')", timeout=30000
        )
        out = {
            "title": await page.title(),
            "navigation": await page.evaluate(
                "performance.getEntriesByType('navigation')[0].nextHopProtocol"
            ),
            "resources": await page.evaluate(
                "performance.getEntriesByType('resource').map(e => e.nextHopProtocol)"
            ),
        }
        await browser.close()
        return out


if __name__ == "__main__":
    if not os.path.exists(CHROMIUM):
        sys.exit(2)
    print(json.dumps(asyncio.run(main(json.load(sys.stdin)))))
