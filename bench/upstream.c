/* bench/upstream.c: the application behind the proxies in bench/proxy, the
   same for every server measured. One thread, epoll, non-blocking; HTTP/1.1
   keep-alive with pipelining. It reads each request head, skips its body
   (Content-Length only: every proxy measured sends uploads with a length
   when the client did), and answers by the path's last segment:
     .../100   100 bytes        .../1m   1 MiB
   anything else 404. An upload's answer is the 100-byte one, sent once the
   whole body has arrived. A request with `Upgrade` (a WebSocket handshake,
   bench/proxy scenario 5) is answered 101 with the `Sec-WebSocket-Accept`
   of RFC 6455 §1.3's key (the one bench/idleconns sends), and the
   connection then idles: what comes is read and dropped, and its buffer is
   freed, so 10,000 tunnels cost the upstream little. It listens on
   127.0.0.1 only.

     upstream PORT */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_FDS 65536
#define IN_CAP 65536

struct answer { char *bytes; size_t len; };
static struct answer small, large, missing, switching;

struct conn {
  char in[IN_CAP];
  size_t have;          /* bytes in `in` */
  unsigned long long skip; /* body bytes still to discard */
  const struct answer *pending; /* set while the body is being skipped */
  const char *out;      /* what is being written */
  size_t out_left;
  int writing;          /* waits for EPOLLOUT */
  int upgrading;        /* what is being written is the 101 */
};
static struct conn *conns[MAX_FDS];
/* The connections that switched protocols: idle tunnels, no buffer. */
static char tunnels[MAX_FDS];

static struct answer make(int status, size_t body) {
  char head[256];
  int h = snprintf(head, sizeof head,
                   "HTTP/1.1 %d %s\r\nServer: upstream\r\nContent-Type: application/octet-stream\r\n"
                   "Content-Length: %zu\r\n\r\n",
                   status, status == 200 ? "OK" : "Not Found", body);
  struct answer a = {malloc(h + body), h + body};
  memcpy(a.bytes, head, h);
  memset(a.bytes + h, 'u', body);
  return a;
}

static void drop(int ep, int fd) {
  epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
  close(fd);
  free(conns[fd]);
  conns[fd] = NULL;
  tunnels[fd] = 0;
}

/* The 101 went: the connection is a tunnel from now on. */
static void tunnel(int fd) {
  free(conns[fd]);
  conns[fd] = NULL;
  tunnels[fd] = 1;
}

static void interest(int ep, int fd, int out) {
  struct epoll_event ev = {.events = out ? EPOLLOUT : EPOLLIN, .data.fd = fd};
  epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev);
}

/* Writes what is pending; 0 when all of it went, 1 when the socket is full,
   -1 on error. */
static int flush(struct conn *c, int fd) {
  while (c->out_left) {
    ssize_t w = write(fd, c->out, c->out_left);
    if (w < 0) return errno == EAGAIN ? 1 : -1;
    c->out += w;
    c->out_left -= w;
  }
  return 0;
}

/* The answer for a request head of `len` bytes at `h`; its body length in
   *body. */
static const struct answer *route(const char *h, size_t len, unsigned long long *body) {
  *body = 0;
  const char *sp = memchr(h, ' ', len);
  const char *end = sp ? memchr(sp + 1, ' ', h + len - sp - 1) : NULL;
  for (const char *line = memchr(h, '\n', len); line && line < h + len; line = memchr(line + 1, '\n', h + len - line - 1)) {
    if ((size_t)(h + len - line) > 16 && strncasecmp(line + 1, "content-length:", 15) == 0)
      *body = strtoull(line + 16, NULL, 10);
  }
  if (!end) return &missing;
  const char *last = end;
  while (last > sp && last[-1] != '/') last--;
  size_t n = end - last;
  if (n == 3 && memcmp(last, "100", 3) == 0) return &small;
  if (n == 2 && memcmp(last, "1m", 2) == 0) return &large;
  for (const char *line = memchr(h, '\n', len); line && line < h + len; line = memchr(line + 1, '\n', h + len - line - 1)) {
    if ((size_t)(h + len - line) > 9 && strncasecmp(line + 1, "upgrade:", 8) == 0) return &switching;
  }
  if (*body) return &small; /* an upload: answered once read */
  return &missing;
}

/* Consumes what came in: skips bodies, starts answers. Returns -1 to close,
   1 once a 101 went (the connection is a tunnel). */
static int serve(int ep, int fd, struct conn *c) {
  for (;;) {
    if (c->writing) return 0;
    if (c->skip) {
      size_t n = c->have < c->skip ? c->have : c->skip;
      memmove(c->in, c->in + n, c->have - n);
      c->have -= n;
      c->skip -= n;
      if (c->skip) return 0;
    }
    if (c->pending) {
      c->upgrading = c->pending == &switching;
      c->out = c->pending->bytes;
      c->out_left = c->pending->len;
      c->pending = NULL;
      int f = flush(c, fd);
      if (f < 0) return -1;
      if (f) { c->writing = 1; interest(ep, fd, 1); return 0; }
      if (c->upgrading) return 1;
    }
    char *e = memmem(c->in, c->have, "\r\n\r\n", 4);
    if (!e) return c->have == IN_CAP ? -1 : 0;
    size_t head = e + 4 - c->in;
    unsigned long long body;
    c->pending = route(c->in, head, &body);
    memmove(c->in, c->in + head, c->have - head);
    c->have -= head;
    c->skip = body;
  }
}

int main(int argc, char **argv) {
  int port = argc > 1 ? atoi(argv[1]) : 8091;
  /* A proxy that closes a connection mid-answer must not end the upstream. */
  signal(SIGPIPE, SIG_IGN);
  small = make(200, 100);
  large = make(200, 1 << 20);
  missing = make(404, 0);
  static char ws[] = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                     "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n";
  switching = (struct answer){ws, sizeof ws - 1};
  int ls = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0), one = 1;
  setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
  inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  if (bind(ls, (void *)&a, sizeof a) || listen(ls, 4096)) { perror("bind"); return 1; }
  int ep = epoll_create1(0);
  struct epoll_event ev = {.events = EPOLLIN, .data.fd = ls};
  epoll_ctl(ep, EPOLL_CTL_ADD, ls, &ev);
  struct epoll_event evs[256];
  for (;;) {
    int n = epoll_wait(ep, evs, 256, -1);
    for (int i = 0; i < n; i++) {
      int fd = evs[i].data.fd;
      if (fd == ls) {
        int s;
        while ((s = accept4(ls, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
          if (s >= MAX_FDS) { close(s); continue; }
          setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          conns[s] = calloc(1, sizeof(struct conn));
          struct epoll_event ce = {.events = EPOLLIN, .data.fd = s};
          epoll_ctl(ep, EPOLL_CTL_ADD, s, &ce);
        }
        continue;
      }
      struct conn *c = conns[fd];
      if (tunnels[fd]) {
        char sink[4096];
        ssize_t r = read(fd, sink, sizeof sink);
        if (r == 0 || (r < 0 && errno != EAGAIN)) drop(ep, fd);
        continue;
      }
      if (!c) continue;
      int s;
      if (c->writing) {
        int f = flush(c, fd);
        if (f < 0) { drop(ep, fd); continue; }
        if (f) continue;
        c->writing = 0;
        interest(ep, fd, 0);
        if (c->upgrading) { tunnel(fd); continue; }
        s = serve(ep, fd, c);
      } else {
        ssize_t r = read(fd, c->in + c->have, IN_CAP - c->have);
        if (r == 0 || (r < 0 && errno != EAGAIN)) { drop(ep, fd); continue; }
        if (r > 0) c->have += r;
        s = serve(ep, fd, c);
      }
      if (s < 0) drop(ep, fd);
      else if (s > 0) tunnel(fd);
    }
  }
}
