/* Ceiling probe for bench/proxy: the least a keep-alive HTTP/1.1 proxy can
   do on one core with epoll. Each client connection gets its own upstream
   connection, opened when the client's is accepted and kept for its life
   (a perfect keep-alive pool), and bytes are relayed as they come, both
   ways, untouched: no parsing, no header added, no pool look-up. A
   request costs read + send towards the upstream and read + send back,
   and a share of epoll_wait: what nginx, HAProxy and brisk make.
   Used only to measure the machine's limit, like bench/ceiling.c.

   proxy-ceiling PORT UPSTREAM_PORT (both on 127.0.0.1) */
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
#include <sys/socket.h>
#include <unistd.h>

#define MAXFD 65536
static int peer[MAXFD]; /* the other end of each relayed connection, or -1 */

static struct sockaddr_in addr(int port) {
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
  inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  return a;
}

/* Sends all of buf; where the socket is full (1 MiB answers and uploads,
   which the ceiling is not meant for but must not break), waits for room. */
static int send_all(int fd, const char *buf, ssize_t len) {
  while (len > 0) {
    ssize_t w = send(fd, buf, len, MSG_NOSIGNAL);
    if (w > 0) { buf += w; len -= w; continue; }
    if (w < 0 && errno == EAGAIN) {
      struct pollfd p = {.fd = fd, .events = POLLOUT};
      poll(&p, 1, -1);
      continue;
    }
    return -1;
  }
  return 0;
}

static void drop(int ep, int fd) {
  int other = peer[fd];
  epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
  close(fd);
  peer[fd] = -1;
  if (other >= 0) {
    epoll_ctl(ep, EPOLL_CTL_DEL, other, NULL);
    close(other);
    peer[other] = -1;
  }
}

int main(int argc, char **argv) {
  if (argc < 3) { fprintf(stderr, "usage: proxy-ceiling PORT UPSTREAM_PORT\n"); return 2; }
  struct sockaddr_in me = addr(atoi(argv[1])), up = addr(atoi(argv[2]));
  memset(peer, -1, sizeof peer);
  int ls = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0), one = 1;
  setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(ls, (void *)&me, sizeof me) || listen(ls, 4096)) { perror("bind"); return 1; }
  int ep = epoll_create1(0);
  struct epoll_event ev = {.events = EPOLLIN, .data.fd = ls};
  epoll_ctl(ep, EPOLL_CTL_ADD, ls, &ev);
  struct epoll_event evs[256];
  static char buf[1 << 18];
  for (;;) {
    int n = epoll_wait(ep, evs, 256, -1);
    for (int i = 0; i < n; i++) {
      int fd = evs[i].data.fd;
      if (fd == ls) {
        int c;
        while ((c = accept4(ls, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
          /* (A blocking connect: 127.0.0.1 answers at once.) */
          int u = socket(AF_INET, SOCK_STREAM, 0);
          if (c >= MAXFD || u < 0 || u >= MAXFD || connect(u, (void *)&up, sizeof up)) {
            close(c);
            if (u >= 0) close(u);
            continue;
          }
          fcntl(u, F_SETFL, O_NONBLOCK);
          setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          setsockopt(u, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          peer[c] = u;
          peer[u] = c;
          struct epoll_event ce = {.events = EPOLLIN, .data.fd = c};
          epoll_ctl(ep, EPOLL_CTL_ADD, c, &ce);
          struct epoll_event ue = {.events = EPOLLIN, .data.fd = u};
          epoll_ctl(ep, EPOLL_CTL_ADD, u, &ue);
        }
        continue;
      }
      if (peer[fd] < 0) continue; /* dropped earlier in this batch */
      ssize_t r = read(fd, buf, sizeof buf);
      if (r < 0 && errno == EAGAIN) continue;
      if (r <= 0 || send_all(peer[fd], buf, r)) drop(ep, fd);
    }
  }
}
