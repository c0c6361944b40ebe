/* idleconns: opens N keep-alive connections to 127.0.0.1:PORT, sends one
   GET on each and reads the whole answer, then holds them all open and idle
   so that the caller can sample the server's memory.

   usage: idleconns PORT N PATH [MAX_HOLD_SECONDS] [websocket]

   With `websocket`, each request is a WebSocket handshake (RFC 6455
   §4.1, the key of its §1.3) and its answer must be a 101 with nothing
   after its head: the connection is then an idle tunnel through the
   server (bench/proxy scenario 5).

   Prints "ready ok=K failed=F" once every connection has been answered (or
   has failed), then holds until a line arrives on stdin, stdin closes, or
   MAX_HOLD_SECONDS (default 60) pass. Before closing it checks that each
   connection is still open (the server has neither closed it nor sent
   anything more), prints "done open=K closed=C", and closes everything
   with a reset (SO_LINGER 0) so that no TIME_WAIT is left behind.
   Only ever connects to 127.0.0.1; the whole run is bounded in time. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { CONNECTING, SENT, DONE, FAILED };

struct conn {
  int fd;
  int state;
  long need;   /* bytes of body still expected, -1 while the head is incomplete */
  int headlen; /* bytes of head collected so far */
  char head[1024];
};

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static char req[512];
static int reqlen;
/* The requests are WebSocket handshakes (the `websocket` argument). */
static int upgrade;

static void fail(struct conn *c, int ep) {
  epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
  c->state = FAILED;
}

/* Feeds received bytes into the head/body accounting; returns 1 when the
   answer is complete, -1 on a malformed head. */
static int feed(struct conn *c, const char *p, long n) {
  while (n > 0) {
    if (c->need < 0) {
      if (c->headlen >= (int)sizeof c->head - 1) return -1;
      c->head[c->headlen++] = *p++;
      n--;
      c->head[c->headlen] = 0;
      if (c->headlen >= 4 && memcmp(c->head + c->headlen - 4, "\r\n\r\n", 4) == 0) {
        if (upgrade) return strncmp(c->head, "HTTP/1.1 101", 12) == 0 && n == 0 ? 1 : -1;
        if (strncmp(c->head, "HTTP/1.1 200", 12) != 0) return -1;
        char *cl = strcasestr(c->head, "\r\ncontent-length:");
        if (!cl) return -1;
        c->need = strtol(cl + 17, NULL, 10);
        if (c->need == 0) return 1;
      }
    } else {
      long take = n < c->need ? n : c->need;
      c->need -= take;
      p += take;
      n -= take;
      if (c->need == 0) return n == 0 ? 1 : -1; /* extra bytes: not idle */
    }
  }
  return c->need == 0 ? 1 : 0;
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: idleconns PORT N PATH [MAX_HOLD_SECONDS] [websocket]\n");
    return 2;
  }
  int port = atoi(argv[1]);
  int n = atoi(argv[2]);
  const char *path = argv[3];
  double max_hold = argc > 4 ? atof(argv[4]) : 60;
  upgrade = argc > 5 && strcmp(argv[5], "websocket") == 0;
  if (n <= 0 || port <= 0) return 2;

  struct rlimit rl = {(rlim_t)n + 256, (rlim_t)n + 256};
  if (setrlimit(RLIMIT_NOFILE, &rl) != 0) perror("setrlimit");

  reqlen = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: idleconns\r\n%s\r\n", path,
                    upgrade ? "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
                              "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n" : "");
  struct conn *cs = calloc(n, sizeof *cs);
  if (!cs) return 1;
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
  inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  int ep = epoll_create1(0);

  /* At most `window` handshakes and requests in flight, so that the
     server's accept queue never overflows. */
  const int window = 256;
  int started = 0, inflight = 0, ok = 0, failed = 0;
  double deadline = now() + 60;
  struct epoll_event evs[512];
  char buf[65536];
  while (ok + failed < n && now() < deadline) {
    while (started < n && inflight < window) {
      struct conn *c = &cs[started];
      c->need = -1;
      c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
      if (c->fd < 0) { c->state = FAILED; failed++; started++; continue; }
      int one = 1;
      setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      int r = connect(c->fd, (struct sockaddr *)&a, sizeof a);
      if (r != 0 && errno != EINPROGRESS) { close(c->fd); c->fd = -1; c->state = FAILED; failed++; started++; continue; }
      c->state = CONNECTING;
      struct epoll_event ev = {.events = EPOLLOUT | EPOLLIN, .data.u32 = (unsigned)started};
      epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev);
      started++;
      inflight++;
    }
    int k = epoll_wait(ep, evs, 512, 100);
    for (int i = 0; i < k; i++) {
      struct conn *c = &cs[evs[i].data.u32];
      if (c->state == CONNECTING && (evs[i].events & EPOLLOUT)) {
        int err = 0;
        socklen_t el = sizeof err;
        getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &el);
        if (err || write(c->fd, req, reqlen) != reqlen) { fail(c, ep); failed++; inflight--; continue; }
        c->state = SENT;
        struct epoll_event ev = {.events = EPOLLIN, .data.u32 = evs[i].data.u32};
        epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
        continue;
      }
      if (c->state != SENT) continue;
      long r = read(c->fd, buf, sizeof buf);
      if (r < 0 && errno == EAGAIN) continue;
      int st = r > 0 ? feed(c, buf, r) : -1;
      if (st == 0) continue;
      inflight--;
      epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
      if (st == 1) { c->state = DONE; ok++; } else { c->state = FAILED; failed++; }
    }
  }
  failed = n - ok;
  printf("ready ok=%d failed=%d\n", ok, failed);
  fflush(stdout);

  /* Hold: wait for a line on stdin (or its end), bounded by max_hold. */
  struct pollfd pf = {.fd = 0, .events = POLLIN};
  double until = now() + max_hold;
  while (now() < until) {
    int left_ms = (int)((until - now()) * 1000) + 1;
    if (poll(&pf, 1, left_ms) > 0) break;
  }

  int open_ = 0, closed = 0;
  struct linger lg = {1, 0};
  for (int i = 0; i < n; i++) {
    if (cs[i].fd <= 0) continue;
    if (cs[i].state == DONE) {
      long r = recv(cs[i].fd, buf, sizeof buf, MSG_DONTWAIT);
      if (r < 0 && errno == EAGAIN) open_++; else closed++;
    }
    setsockopt(cs[i].fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    close(cs[i].fd);
  }
  printf("done open=%d closed=%d\n", open_, closed);
  return 0;
}
