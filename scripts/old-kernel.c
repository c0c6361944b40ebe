/* Runs a program as it would run on Linux 4.19 (Debian 10; RHEL 8's 4.18
   has the same calls): every system call numbered 424 or more fails with
   ENOSYS, as on a kernel that predates it. Those are the calls added
   since Linux 5.1, numbered alike on every architecture: pidfd_*,
   io_uring_*, clone3, close_range, openat2, faccessat2, epoll_pwait2,
   Landlock's, cachestat, ... (glibc falls back from clone3 and faccessat2
   to the old calls, as on such a kernel). The filter stays across execve
   and is inherited by every process the program starts.

   With --eperm first, the calls from close_range (436, Linux 5.9) on
   fail with EPERM instead, as a container's or a service manager's
   seccomp profile written before them answers (Docker's default before
   20.10, a systemd SystemCallFilter list with SystemCallErrorNumber=EPERM);
   those before it still with ENOSYS (such profiles answer clone3 so, for
   glibc to fall back).

   scripts/test runs the integration suite against brisk through it:
       cc -O2 -o old-kernel scripts/old-kernel.c
       printf '#!/bin/sh\nexec %s %s "$@"\n' "$PWD/old-kernel" "$PWD/target/debug/brisk" > brisk-4.19
       chmod +x brisk-4.19; BRISK_TEST_BINARY=$PWD/brisk-4.19 cargo test --test it
*/
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

int main(int argc, char **argv) {
    int eperm = argc > 1 && strcmp(argv[1], "--eperm") == 0;
    argv += eperm;
    argc -= eperm;
    if (argc < 2) {
        fprintf(stderr, "usage: old-kernel [--eperm] PROGRAM [ARGUMENT...]\n");
        return 2;
    }
    struct sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        /* (x32's numbers, with bit 30 set, are left alone.) */
        BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 4, 0),
        BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 424, 0, 3),
        BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, eperm ? 436 : 0x40000000, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog program = {sizeof filter / sizeof filter[0], filter};
    /* (Needed to install a filter without CAP_SYS_ADMIN; brisk sets it
       for its own filter anyway.) */
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program)) {
        perror("old-kernel: seccomp");
        return 126;
    }
    execv(argv[1], argv + 1);
    perror(argv[1]);
    return 127;
}
