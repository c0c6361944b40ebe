/* io_uring spike (issue #29): the ceiling responder of bench/ceiling.c rebuilt on io_uring,
   to learn whether the transport pays before brisk gets one. Same answer (a fixed 200 with a
   1 KiB body per request end), same single thread; only the system interface differs.

   What it uses (each switchable, to measure what each is worth):
   - one multishot accept on the listener (IORING_ACCEPT_MULTISHOT, kernel 5.19);
   - one multishot receive per connection (IORING_RECV_MULTISHOT, 6.0) into a ring of provided
     buffers (IORING_REGISTER_PBUF_RING, 5.19): no buffer is tied to an idle connection;
   - one send per batch of answers, from a static buffer;
   - IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN (6.1): completions are run only
     when the loop asks for them, in its own io_uring_enter call;
   - "direct" mode: accepted sockets go straight into a registered file table
     (IORING_FILE_INDEX_ALLOC, 5.19) and every operation names them IOSQE_FIXED_FILE, so no
     file-table lookup or reference count per operation; TCP_NODELAY cannot be set on those
     (no fd), which for one answer per request changes nothing on the wire.
   SQPOLL is off: a polling kernel thread spends a core to save system calls, and this machine
   has two.

   "direct" also registers the ring's own descriptor (IORING_REGISTER_RING_FDS).

   Usage: uring [PORT] [direct|plain]            (default 8091 plain)
*/
#define _GNU_SOURCE
#include <sys/resource.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

#define ENTRIES 4096
#define NBUF 1024          /* provided buffers, a power of two */
#define BUFSZ 4096
#include "ring.h"

#define MAXCONN 16384

static char resp[2048]; static int resp_len;
static char out[65536 * 2];
static int direct;
/* per connection: bytes of answers still to send (a short send re-submits the rest) and the
   offset in `out` they start at; the whole batch always comes from `out`. */
static struct { int pending, off, queued, closing; } conn[MAXCONN];

enum { T_ACCEPT = 1, T_RECV = 2, T_SEND = 3, T_CLOSE = 4 };
#define UD(t, fd) (((uint64_t)(t) << 32) | (uint32_t)(fd))

static void prep_recv(int fd) {
  struct io_uring_sqe *s = sqe_get();
  s->opcode = IORING_OP_RECV;
  s->fd = fd;
  s->ioprio = IORING_RECV_MULTISHOT;
  s->flags = IOSQE_BUFFER_SELECT | (direct ? IOSQE_FIXED_FILE : 0);
  s->buf_group = 0;
  s->user_data = UD(T_RECV, fd);
}

static void prep_send(int fd) {
  struct io_uring_sqe *s = sqe_get();
  s->opcode = IORING_OP_SEND;
  s->fd = fd;
  s->addr = (uint64_t)(uintptr_t)(out + conn[fd].off);
  s->len = conn[fd].pending;
  s->msg_flags = MSG_NOSIGNAL;
  s->flags = direct ? IOSQE_FIXED_FILE : 0;
  s->user_data = UD(T_SEND, fd);
}

static void prep_close(int fd) {
  struct io_uring_sqe *s = sqe_get();
  s->opcode = IORING_OP_CLOSE;
  if (direct) s->file_index = fd + 1; else s->fd = fd;
  s->user_data = UD(T_CLOSE, fd);
}

static void prep_accept(int ls) {
  struct io_uring_sqe *s = sqe_get();
  s->opcode = IORING_OP_ACCEPT;
  s->fd = ls;
  s->ioprio = IORING_ACCEPT_MULTISHOT;
  s->accept_flags = direct ? 0 : SOCK_NONBLOCK;
  if (direct) s->file_index = IORING_FILE_INDEX_ALLOC;
  s->user_data = UD(T_ACCEPT, ls);
}

int main(int argc, char **argv) {
  int port = argc > 1 ? atoi(argv[1]) : 8091;
  direct = argc > 2 && !strcmp(argv[2], "direct");
  char body[1024]; memset(body, 'a', sizeof body);
  resp_len = snprintf(resp, sizeof resp, "HTTP/1.1 200 OK\r\nServer: ceiling\r\nContent-Type: text/html\r\nContent-Length: 1024\r\n\r\n");
  memcpy(resp + resp_len, body, 1024); resp_len += 1024;
  for (int len = 0; len + resp_len <= (int)sizeof out; len += resp_len) memcpy(out + len, resp, resp_len);

  int ls = socket(AF_INET, SOCK_STREAM, 0), one = 1;
  setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
  inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  if (bind(ls, (void *)&a, sizeof a) || listen(ls, 4096)) { perror("bind"); return 1; }

  ring_setup();

  if (direct) {
    struct io_uring_rsrc_update up = {.offset = -1U, .data = (uint64_t)R.fd};
    if (sys_register(IORING_REGISTER_RING_FDS, &up, 1) == 1) ring_index = up.offset;
  }
  if (direct) {  /* the table's slots count against RLIMIT_NOFILE */
    struct rlimit rl; getrlimit(RLIMIT_NOFILE, &rl); rl.rlim_cur = rl.rlim_max; setrlimit(RLIMIT_NOFILE, &rl);
    struct io_uring_rsrc_register rr = {.nr = MAXCONN - 1, .flags = IORING_RSRC_REGISTER_SPARSE};
    if (sys_register(IORING_REGISTER_FILES2, &rr, sizeof rr) < 0) { perror("register files"); return 1; }
  }

  prep_accept(ls);
  for (;;) {
    submit_and_wait();
    struct io_uring_cqe cqe, *c = &cqe;
    while (next_cqe(&cqe)) {
      int t = c->user_data >> 32, fd = (int)(uint32_t)c->user_data, res = c->res;
      unsigned flags = c->flags;
      switch (t) {
      case T_ACCEPT:
        if (res >= 0) {
          if (!direct) setsockopt(res, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          conn[res].pending = 0; conn[res].queued = 0; conn[res].closing = 0;
          prep_recv(res);
        }
        if (!(flags & IORING_CQE_F_MORE)) prep_accept(ls);
        break;
      case T_RECV:
        if (res <= 0) {
          if (res == -ENOBUFS) { prep_recv(fd); break; }  /* ring ran dry: ask again */
          if (!(flags & IORING_CQE_F_MORE) && !conn[fd].closing) { conn[fd].closing = 1; if (!conn[fd].pending) prep_close(fd); }
          break;
        }
        {
          unsigned bid = flags >> IORING_CQE_BUFFER_SHIFT;
          char *b = bufs + (size_t)bid * BUFSZ;
          int reqs = 0;
          for (int k = 3; k < res; k++) if (b[k] == '\n' && b[k-1] == '\r' && b[k-2] == '\n' && b[k-3] == '\r') reqs++;
          buf_return(bid);
          int len = reqs * resp_len;
          if (len > (int)sizeof out) len = sizeof out / resp_len * resp_len;
          if (len && !conn[fd].pending) { conn[fd].off = 0; conn[fd].pending = len; prep_send(fd); }
          else conn[fd].queued += len;  /* a send is in flight: these follow it */
          if (!(flags & IORING_CQE_F_MORE)) prep_recv(fd);
        }
        break;
      case T_SEND:
        if (res < 0) { conn[fd].pending = 0; if (!conn[fd].closing) { conn[fd].closing = 1; prep_close(fd); } break; }
        conn[fd].pending -= res; conn[fd].off += res;
        if (conn[fd].pending > 0) prep_send(fd);
        else if (conn[fd].queued > 0) {
          conn[fd].off = 0; conn[fd].pending = conn[fd].queued < (int)sizeof out ? conn[fd].queued : (int)(sizeof out / resp_len * resp_len);
          conn[fd].queued -= conn[fd].pending; prep_send(fd);
        } else if (conn[fd].closing) prep_close(fd);
        break;
      case T_CLOSE:
        break;
      }
    }
  }
}
