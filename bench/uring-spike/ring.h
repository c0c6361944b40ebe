/* The io_uring plumbing the two spikes share (uring.c, relay.c), by hand, without liburing: the
   rings mapped, submission entries taken in order, completions waited for, and a ring of
   provided buffers (group 0). Define ENTRIES (submission entries, completions four times
   that), NBUF (provided buffers, a power of two) and BUFSZ before including it. */
#include <errno.h>
#include <linux/io_uring.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static struct {
  int fd;
  unsigned *sq_head, *sq_tail, *sq_mask, *sq_array;
  unsigned *cq_head, *cq_tail, *cq_mask;
  struct io_uring_sqe *sqes;
  struct io_uring_cqe *cqes;
  unsigned sq_local_tail, to_submit;
} R;

static struct io_uring_buf_ring *br;
static char *bufs;
static unsigned short br_tail;

/* The ring's own descriptor registered with itself (IORING_REGISTER_RING_FDS, 5.18): each
   io_uring_enter then names it by index and skips the file-table lookup. */
static int ring_index = -1;

static int sys_enter(unsigned sub, unsigned minc, unsigned flags) {
  int fd = R.fd;
  if (ring_index >= 0) { fd = ring_index; flags |= IORING_ENTER_REGISTERED_RING; }
  return syscall(__NR_io_uring_enter, fd, sub, minc, flags, NULL, 0);
}

static int sys_register(unsigned op, void *arg, unsigned n) {
  return syscall(__NR_io_uring_register, R.fd, op, arg, n);
}

static struct io_uring_sqe *sqe_get(void) {
  unsigned head = atomic_load_explicit((_Atomic unsigned *)R.sq_head, memory_order_acquire);
  if (R.sq_local_tail - head >= ENTRIES) { /* full: submit what we have */
    atomic_store_explicit((_Atomic unsigned *)R.sq_tail, R.sq_local_tail, memory_order_release);
    sys_enter(R.to_submit, 0, 0);
    R.to_submit = 0;
  }
  unsigned idx = R.sq_local_tail & *R.sq_mask;
  struct io_uring_sqe *s = &R.sqes[idx];
  memset(s, 0, sizeof *s);
  R.sq_array[idx] = idx;
  R.sq_local_tail++;
  R.to_submit++;
  return s;
}

static void buf_return(unsigned bid) {
  struct io_uring_buf *b = &br->bufs[br_tail & (NBUF - 1)];
  b->addr = (uint64_t)(uintptr_t)(bufs + (size_t)bid * BUFSZ);
  b->len = BUFSZ;
  b->bid = bid;
  br_tail++;
  atomic_store_explicit((_Atomic unsigned short *)&br->tail, br_tail, memory_order_release);
}

/* The ring (SINGLE_ISSUER | DEFER_TASKRUN: completions run only inside the loop's own
   io_uring_enter) and its provided buffers; exits when the kernel refuses either. */
static void ring_setup(void) {
  struct io_uring_params p = {0};
  p.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_CQSIZE;
  p.cq_entries = ENTRIES * 4;
  R.fd = syscall(__NR_io_uring_setup, ENTRIES, &p);
  if (R.fd < 0) { perror("io_uring_setup"); exit(1); }
  size_t sq_sz = p.sq_off.array + p.sq_entries * sizeof(unsigned);
  size_t cq_sz = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
  if (cq_sz > sq_sz) sq_sz = cq_sz; /* IORING_FEAT_SINGLE_MMAP: one map for both rings */
  char *sq = mmap(0, sq_sz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, R.fd, IORING_OFF_SQ_RING);
  R.sqes = mmap(0, p.sq_entries * sizeof(struct io_uring_sqe), PROT_READ | PROT_WRITE,
                MAP_SHARED | MAP_POPULATE, R.fd, IORING_OFF_SQES);
  if (sq == MAP_FAILED || R.sqes == MAP_FAILED) { perror("mmap"); exit(1); }
  R.sq_head = (unsigned *)(sq + p.sq_off.head); R.sq_tail = (unsigned *)(sq + p.sq_off.tail);
  R.sq_mask = (unsigned *)(sq + p.sq_off.ring_mask); R.sq_array = (unsigned *)(sq + p.sq_off.array);
  R.cq_head = (unsigned *)(sq + p.cq_off.head); R.cq_tail = (unsigned *)(sq + p.cq_off.tail);
  R.cq_mask = (unsigned *)(sq + p.cq_off.ring_mask);
  R.cqes = (struct io_uring_cqe *)(sq + p.cq_off.cqes);
  R.sq_local_tail = *R.sq_tail;

  br = mmap(0, NBUF * sizeof(struct io_uring_buf), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  bufs = malloc((size_t)NBUF * BUFSZ);
  struct io_uring_buf_reg reg = {.ring_addr = (uint64_t)(uintptr_t)br, .ring_entries = NBUF, .bgid = 0};
  if (sys_register(IORING_REGISTER_PBUF_RING, &reg, 1) < 0) { perror("register pbuf ring"); exit(1); }
  for (unsigned i = 0; i < NBUF; i++) buf_return(i);
}

/* Submits what was prepared and waits for one completion at least (exits on an error). */
static void submit_and_wait(void) {
  atomic_store_explicit((_Atomic unsigned *)R.sq_tail, R.sq_local_tail, memory_order_release);
  int r = sys_enter(R.to_submit, 1, IORING_ENTER_GETEVENTS);
  if (r < 0 && errno != EINTR && errno != EBUSY) { perror("io_uring_enter"); exit(1); }
  R.to_submit = 0;
}

/* The next completion, copied out (its slot is given back to the kernel at once); 0 once every
   completion there is has been taken. */
static int next_cqe(struct io_uring_cqe *out) {
  unsigned head = *R.cq_head;
  if (head == atomic_load_explicit((_Atomic unsigned *)R.cq_tail, memory_order_acquire)) return 0;
  *out = R.cqes[head & *R.cq_mask];
  atomic_store_explicit((_Atomic unsigned *)R.cq_head, head + 1, memory_order_release);
  return 1;
}
