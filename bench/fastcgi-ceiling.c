/* Ceiling probe for bench/proxy's scenario 4 (hello.php through php-fpm):
   the least a keep-alive FastCGI front can do on one core with epoll.
   Each client connection gets its own connection to the application,
   opened when the client's is accepted and kept for its life
   (FCGI_KEEP_CONN: a perfect pool). A client's read is taken to be one
   whole GET (as wrk sends them: one at a time); it is answered by one
   send of a request built once at start (BEGIN_REQUEST, the PARAMS a
   front sends for the script, the ends of PARAMS and STDIN): no parsing,
   no routing, no look-up. The application's records are read until
   END_REQUEST; its STDOUT (PHP's header lines, the empty line, the body)
   goes to the client in one send behind a status line and a
   Content-Length. A request costs read + send towards the application and
   read + send back (more reads if the application's records come in
   pieces), and a share of epoll_wait: what nginx and brisk make.
   Used only to measure the machine's limit, like bench/proxy-ceiling.c.

   fastcgi-ceiling PORT SOCKET SCRIPT   (PORT on 127.0.0.1; SOCKET the
   application's unix socket; SCRIPT the absolute path of the script) */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#define MAXFD 65536
#define ID 1

struct conn {
  int peer;       /* the other end, or -1 */
  int app;        /* this is the application's end */
  char *in;       /* the application's records read so far (its end) */
  size_t len, cap;
};
static struct conn c[MAXFD];
static char request[8192];
static size_t request_len;

static void header(char *at, int type, size_t len, int pad) {
  unsigned char h[8] = {1, type, 0, ID, len >> 8, len & 0xff, pad, 0};
  memcpy(at, h, 8);
}

/* Appends one name-value pair (both under 128 bytes) to the PARAMS
   content at `p`. */
static size_t pair(char *p, const char *name, const char *value) {
  size_t n = strlen(name), v = strlen(value);
  p[0] = n;
  p[1] = v;
  memcpy(p + 2, name, n);
  memcpy(p + 2 + n, value, v);
  return 2 + n + v;
}

/* The request every GET becomes: what a front sends for the script, as
   nginx's fastcgi.conf lists it, with the fields wrk sends. */
static void build(const char *script, int port) {
  char params[4096], portstr[16], *root = strdup(script);
  *strrchr(root, '/') = 0;
  snprintf(portstr, sizeof portstr, "%d", port);
  const char *name = strrchr(script, '/');
  size_t p = 0;
  p += pair(params + p, "SCRIPT_FILENAME", script);
  p += pair(params + p, "QUERY_STRING", "");
  p += pair(params + p, "REQUEST_METHOD", "GET");
  p += pair(params + p, "CONTENT_TYPE", "");
  p += pair(params + p, "CONTENT_LENGTH", "");
  p += pair(params + p, "SCRIPT_NAME", name);
  p += pair(params + p, "REQUEST_URI", name);
  p += pair(params + p, "DOCUMENT_URI", name);
  p += pair(params + p, "DOCUMENT_ROOT", root);
  p += pair(params + p, "SERVER_PROTOCOL", "HTTP/1.1");
  p += pair(params + p, "REQUEST_SCHEME", "http");
  p += pair(params + p, "GATEWAY_INTERFACE", "CGI/1.1");
  p += pair(params + p, "SERVER_SOFTWARE", "ceiling");
  p += pair(params + p, "REMOTE_ADDR", "127.0.0.1");
  p += pair(params + p, "REMOTE_PORT", "40000");
  p += pair(params + p, "SERVER_ADDR", "127.0.0.1");
  p += pair(params + p, "SERVER_PORT", portstr);
  p += pair(params + p, "SERVER_NAME", "127.0.0.1");
  p += pair(params + p, "REDIRECT_STATUS", "200");
  p += pair(params + p, "HTTP_HOST", "127.0.0.1");
  int pad = (8 - p % 8) % 8;
  char *r = request;
  header(r, 1, 8, 0); /* BEGIN_REQUEST: responder, keep the connection */
  unsigned char begin[8] = {0, 1, 1, 0, 0, 0, 0, 0};
  memcpy(r + 8, begin, 8);
  r += 16;
  header(r, 4, p, pad);
  memcpy(r + 8, params, p);
  memset(r + 8 + p, 0, pad);
  r += 8 + p + pad;
  header(r, 4, 0, 0); /* the end of PARAMS */
  header(r + 8, 5, 0, 0); /* the end of STDIN */
  request_len = r + 16 - request;
  free(root);
}

static int send_all(int fd, const char *buf, size_t len) {
  while (len > 0) {
    ssize_t w = send(fd, buf, len, MSG_NOSIGNAL);
    if (w <= 0) return -1; /* (A few hundred bytes: never a full socket.) */
    buf += w;
    len -= w;
  }
  return 0;
}

static void drop(int ep, int fd) {
  int ends[2] = {fd, c[fd].peer};
  for (int i = 0; i < 2; i++) {
    int e = ends[i];
    if (e < 0) continue;
    epoll_ctl(ep, EPOLL_CTL_DEL, e, NULL);
    close(e);
    free(c[e].in);
    c[e] = (struct conn){.peer = -1};
  }
}

/* The application's records in `a->in`: once END_REQUEST is there, the
   client gets its STDOUT. Returns -1 on a failed send. */
static int answer(int client, struct conn *a) {
  size_t at = 0, end = 0;
  while (!end && a->len - at >= 8) {
    unsigned char *h = (unsigned char *)a->in + at;
    size_t whole = 8 + ((h[4] << 8) | h[5]) + h[6];
    if (a->len - at < whole) break;
    at += whole;
    if (h[1] == 3) end = at; /* END_REQUEST */
  }
  if (!end) return 0; /* (Read more.) */
  size_t out = 0;
  for (at = 0; at < end;) { /* STDOUT's content, gathered at the front */
    unsigned char *h = (unsigned char *)a->in + at;
    size_t len = (h[4] << 8) | h[5];
    if (h[1] == 6) {
      memmove(a->in + out, a->in + at + 8, len);
      out += len;
    }
    at += 8 + len + h[6];
  }
  char *blank = memmem(a->in, out, "\r\n\r\n", 4);
  size_t body = blank ? out - (blank + 4 - a->in) : 0;
  char head[64];
  int n = snprintf(head, sizeof head, "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n", body);
  struct iovec iov[2] = {{head, n}, {a->in, out}};
  struct msghdr m = {.msg_iov = iov, .msg_iovlen = 2};
  /* (A few hundred bytes: never a short send.) */
  ssize_t w = sendmsg(client, &m, MSG_NOSIGNAL);
  a->len = 0; /* (wrk sends the next request only after this answer.) */
  return w == (ssize_t)(n + out) ? 0 : -1;
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: fastcgi-ceiling PORT SOCKET SCRIPT\n");
    return 2;
  }
  int port = atoi(argv[1]);
  struct sockaddr_in me = {.sin_family = AF_INET, .sin_port = htons(port)};
  inet_pton(AF_INET, "127.0.0.1", &me.sin_addr);
  struct sockaddr_un app = {.sun_family = AF_UNIX};
  strncpy(app.sun_path, argv[2], sizeof app.sun_path - 1);
  build(argv[3], port);
  for (int i = 0; i < MAXFD; i++) c[i].peer = -1;
  int ls = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0), one = 1;
  setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(ls, (void *)&me, sizeof me) || listen(ls, 4096)) {
    perror("bind");
    return 1;
  }
  int ep = epoll_create1(0);
  struct epoll_event ev = {.events = EPOLLIN, .data.fd = ls};
  epoll_ctl(ep, EPOLL_CTL_ADD, ls, &ev);
  struct epoll_event evs[256];
  static char buf[1 << 16];
  for (;;) {
    int n = epoll_wait(ep, evs, 256, -1);
    for (int i = 0; i < n; i++) {
      int fd = evs[i].data.fd;
      if (fd == ls) {
        int cl;
        while ((cl = accept4(ls, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
          /* (A blocking connect: a local socket answers at once.) */
          int u = socket(AF_UNIX, SOCK_STREAM, 0);
          if (cl >= MAXFD || u < 0 || u >= MAXFD || connect(u, (void *)&app, sizeof app)) {
            close(cl);
            if (u >= 0) close(u);
            continue;
          }
          fcntl(u, F_SETFL, O_NONBLOCK);
          setsockopt(cl, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          c[cl] = (struct conn){.peer = u};
          c[u] = (struct conn){.peer = cl, .app = 1, .cap = 4096, .in = malloc(4096)};
          struct epoll_event ce = {.events = EPOLLIN, .data.fd = cl};
          epoll_ctl(ep, EPOLL_CTL_ADD, cl, &ce);
          struct epoll_event ue = {.events = EPOLLIN, .data.fd = u};
          epoll_ctl(ep, EPOLL_CTL_ADD, u, &ue);
        }
        continue;
      }
      struct conn *k = &c[fd];
      if (k->peer < 0) continue; /* dropped earlier in this batch */
      if (!k->app) {
        ssize_t r = read(fd, buf, sizeof buf);
        if (r < 0 && errno == EAGAIN) continue;
        if (r <= 0 || send_all(k->peer, request, request_len)) drop(ep, fd);
        continue;
      }
      if (k->cap - k->len < 4096) {
        k->cap *= 2;
        k->in = realloc(k->in, k->cap);
      }
      ssize_t r = read(fd, k->in + k->len, k->cap - k->len);
      if (r < 0 && errno == EAGAIN) continue;
      if (r <= 0) {
        drop(ep, fd);
        continue;
      }
      k->len += r;
      if (answer(k->peer, k)) drop(ep, fd);
    }
  }
}
