/* io_uring spike, second question (issue #27): bench/proxy-ceiling.c, the least a keep-alive
   HTTP/1.1 proxy can do on one core with epoll, rebuilt on io_uring. Each client connection
   gets its own upstream connection, opened when the client's is accepted and kept for its
   life, and bytes are relayed as they come, both ways, untouched. The epoll relay makes four
   system calls a proxied request (read and send each way) and a share of epoll_wait; this one
   makes one io_uring_enter for all the connections' completions of a turn of its loop.

   What it uses: one multishot accept; one multishot receive per socket into a ring of
   provided buffers (IORING_REGISTER_PBUF_RING); the buffer received is sent to the other
   socket as it is (IORING_OP_SEND), and given back to the ring once sent; sends on one socket
   go one at a time, in order. IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN, plain
   descriptors (the spike of uring.c found registered files worth nothing clear), no SQPOLL.
   Used only to measure, like the other ceilings: bounded buffers, no timeouts.

   Usage: relay PORT UPSTREAM_PORT (both on 127.0.0.1) */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#define ENTRIES 4096
#define NBUF 2048 /* provided buffers, a power of two */
#define BUFSZ 16384
#include "ring.h"

#define MAXFD 16384

/* Per socket: its peer, its generation (completions of a closed socket's number are told
   from those of the next socket given that number), whether it waits for buffers, and the
   buffers received from its peer that it still has to send, in a list (first and last, -1
   when none), the first of them in flight, `sent` bytes of it gone. A buffer is in one list
   at most: its length and the next one are kept by buffer. All the buffers in lists are at
   most NBUF: when they are taken, receives stop (ENOBUFS) until sends give some back. */
static struct sock {
  int peer, gen, starved, open;
  int first, last, sent;
} S[MAXFD];
static int next_of[NBUF], len_of[NBUF];
static int starved[MAXFD], n_starved;

enum { T_ACCEPT = 1, T_RECV, T_SEND, T_CLOSE };
/* user_data: the kind (8 bits), the socket's generation (16), a send's buffer (16), the
   socket (24). */
#define UD(t, fd, bid) (((uint64_t)(t) << 56) | ((uint64_t)(S[fd].gen & 0xffff) << 40) | \
                        ((uint64_t)(bid) << 24) | (uint32_t)(fd))

static void prep_recv(int fd) {
  struct io_uring_sqe *s = sqe_get();
  s->opcode = IORING_OP_RECV;
  s->fd = fd;
  s->ioprio = IORING_RECV_MULTISHOT;
  s->flags = IOSQE_BUFFER_SELECT;
  s->buf_group = 0;
  s->user_data = UD(T_RECV, fd, 0);
}

static void prep_send(int fd) {
  struct sock *k = &S[fd];
  struct io_uring_sqe *s = sqe_get();
  s->opcode = IORING_OP_SEND;
  s->fd = fd;
  s->addr = (uint64_t)(uintptr_t)(bufs + (size_t)k->first * BUFSZ + k->sent);
  s->len = len_of[k->first] - k->sent;
  s->msg_flags = MSG_NOSIGNAL;
  s->user_data = UD(T_SEND, fd, k->first);
}

/* Buffers came back: the sockets that ran dry receive again. */
static void feed_starved(void) {
  while (n_starved > 0) {
    int fd = starved[--n_starved];
    if (S[fd].open && S[fd].starved) { S[fd].starved = 0; prep_recv(fd); }
  }
}

/* The buffers a closed socket had still to send go back, but the one in flight: its send's
   completion gives it back. */
static void drop_queue(int fd) {
  struct sock *k = &S[fd];
  if (k->first < 0) return;
  for (int b = next_of[k->first]; b >= 0;) {
    int next = next_of[b];
    buf_return(b);
    b = next;
  }
  k->first = k->last = -1;
  k->sent = 0;
}

static void close_one(int fd) {
  if (!S[fd].open) return;
  S[fd].open = 0;
  drop_queue(fd);
  /* (A multishot receive holds the socket open: shut it down, its receive ends.) */
  shutdown(fd, SHUT_RDWR);
  struct io_uring_sqe *s = sqe_get();
  s->opcode = IORING_OP_CLOSE;
  s->fd = fd;
  s->user_data = UD(T_CLOSE, fd, 0);
}

static void close_pair(int fd) {
  int peer = S[fd].peer;
  close_one(fd);
  if (peer >= 0) close_one(peer);
  feed_starved();
}

static struct sockaddr_in addr(int port) {
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
  inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  return a;
}

static void open_sock(int fd, int peer) {
  S[fd].peer = peer;
  S[fd].gen++;
  S[fd].open = 1;
  S[fd].starved = 0;
  S[fd].first = S[fd].last = -1;
  S[fd].sent = 0;
  prep_recv(fd);
}

int main(int argc, char **argv) {
  if (argc < 3) { fprintf(stderr, "usage: relay PORT UPSTREAM_PORT\n"); return 2; }
  struct sockaddr_in me = addr(atoi(argv[1])), up = addr(atoi(argv[2]));
  int ls = socket(AF_INET, SOCK_STREAM, 0), one = 1;
  setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(ls, (void *)&me, sizeof me) || listen(ls, 4096)) { perror("bind"); return 1; }

  ring_setup();

  struct io_uring_sqe *a = sqe_get();
  a->opcode = IORING_OP_ACCEPT;
  a->fd = ls;
  a->ioprio = IORING_ACCEPT_MULTISHOT;
  a->user_data = (uint64_t)T_ACCEPT << 56;
  for (;;) {
    submit_and_wait();
    struct io_uring_cqe cqe, *c = &cqe;
    while (next_cqe(&cqe)) {
      int t = c->user_data >> 56, gen = (c->user_data >> 40) & 0xffff, fd = c->user_data & 0xffffff;
      unsigned sent_bid = (c->user_data >> 24) & 0xffff;
      int res = c->res;
      unsigned flags = c->flags;
      if (t == T_ACCEPT) {
        if (res >= 0) {
          /* (A blocking connect: 127.0.0.1 answers at once.) */
          int u = socket(AF_INET, SOCK_STREAM, 0);
          if (res >= MAXFD || u < 0 || u >= MAXFD || connect(u, (void *)&up, sizeof up)) {
            close(res);
            if (u >= 0) close(u);
          } else {
            setsockopt(res, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            setsockopt(u, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            open_sock(res, u);
            open_sock(u, res);
          }
        }
        if (!(flags & IORING_CQE_F_MORE)) {
          struct io_uring_sqe *s = sqe_get();
          s->opcode = IORING_OP_ACCEPT;
          s->fd = ls;
          s->ioprio = IORING_ACCEPT_MULTISHOT;
          s->user_data = (uint64_t)T_ACCEPT << 56;
        }
        continue;
      }
      if (t == T_CLOSE) continue;
      if (gen != (S[fd].gen & 0xffff) || !S[fd].open) {
        /* (A closed socket's: its buffer goes back.) */
        if (t == T_RECV && res > 0 && (flags & IORING_CQE_F_BUFFER)) buf_return(flags >> IORING_CQE_BUFFER_SHIFT);
        if (t == T_SEND) { buf_return(sent_bid); feed_starved(); }
        continue;
      }
      if (t == T_RECV) {
        if (res == -ENOBUFS) { S[fd].starved = 1; starved[n_starved++] = fd; continue; }
        if (res <= 0) { close_pair(fd); continue; }
        unsigned bid = flags >> IORING_CQE_BUFFER_SHIFT;
        struct sock *k = &S[S[fd].peer];
        len_of[bid] = res;
        next_of[bid] = -1;
        if (k->first < 0) {
          k->first = k->last = bid;
          prep_send(S[fd].peer);
        } else {
          next_of[k->last] = bid;
          k->last = bid;
        }
        if (!(flags & IORING_CQE_F_MORE)) prep_recv(fd);
      } else if (t == T_SEND) {
        struct sock *k = &S[fd];
        if (res < 0) { close_pair(fd); continue; }
        k->sent += res;
        if (k->sent < len_of[k->first]) { prep_send(fd); continue; }
        int done = k->first;
        k->first = next_of[done];
        if (k->first < 0) k->last = -1;
        buf_return(done);
        k->sent = 0;
        if (k->first >= 0) prep_send(fd);
        feed_starved();
      }
    }
  }
}
