/* Ground-truth fork server, loaded with LD_PRELOAD into an unmodified sample binary.
 * When GT_INPUTS names a file of GT_LEN-byte records, the constructor runs the program once per
 * record (fork before main, the record on stdin, stdout captured; both are pipes, as in a test's
 * replay and in a shell pipeline) and writes one line per record
 * to GT_OUT: "<exit status> <stdout as hex>". Signals are reported as 128 + signal number.
 * GT_TARGET says where the record goes: "stdin" (the default), "argv1" (it becomes argv[1], cut at
 * its first NUL like any C string; run the binary with one placeholder argument) or "file:NAME"
 * (the file NAME in the working directory holds exactly the record). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

__attribute__((constructor)) static void gt_forkserver(int argc, char **argv, char **envp) {
    (void)envp;
    const char *inputs = getenv("GT_INPUTS");
    if (!inputs) return;
    int len = atoi(getenv("GT_LEN") ? getenv("GT_LEN") : "0");
    FILE *in = fopen(inputs, "rb");
    FILE *out = fopen(getenv("GT_OUT") ? getenv("GT_OUT") : "/dev/stdout", "w");
    if (!in || !out || len <= 0 || len > 4096) { fprintf(stderr, "forkserver: bad GT_* settings\n"); _exit(70); }
    unsetenv("GT_INPUTS");
    const char *target = getenv("GT_TARGET") ? getenv("GT_TARGET") : "stdin";
    int to_argv = strcmp(target, "argv1") == 0;
    const char *file = strncmp(target, "file:", 5) == 0 ? target + 5 : NULL;
    if (!to_argv && !file && strcmp(target, "stdin") != 0) { fprintf(stderr, "forkserver: bad GT_TARGET\n"); _exit(70); }
    if (to_argv && argc < 2) { fprintf(stderr, "forkserver: GT_TARGET=argv1 needs a placeholder argument\n"); _exit(70); }
    static char arg[4097];
    unsigned char rec[4096];
    char captured[1 << 16];
    while (fread(rec, 1, len, in) == (size_t)len) {
        int ip[2], op[2];
        if (pipe(ip) != 0 || pipe(op) != 0) _exit(73);
        if (!to_argv && !file && write(ip[1], rec, len) != len) _exit(71);   /* len <= 4096: fits the pipe */
        close(ip[1]);
        if (file) {
            FILE *f = fopen(file, "wb");
            if (!f || fwrite(rec, 1, len, f) != (size_t)len || fclose(f) != 0) _exit(72);
        }
        fflush(out);
        pid_t pid = fork();
        if (pid == 0) {
            dup2(ip[0], 0);
            dup2(op[1], 1);
            close(ip[0]);
            close(op[0]);
            close(op[1]);
            fclose(in);
            if (to_argv) {
                memcpy(arg, rec, len);
                arg[len] = 0;
                argv[1] = arg;
            }
            return; /* continue into main with this record on stdin, in argv[1] or in the file */
        }
        close(ip[0]);
        close(op[1]);
        ssize_t n = 0, k;
        char spill[4096];
        while ((k = n < (ssize_t)sizeof captured ? read(op[0], captured + n, sizeof captured - n)
                                                 : read(op[0], spill, sizeof spill)) > 0)
            if (n < (ssize_t)sizeof captured) n += k;       /* output past the buffer is drained */
        close(op[0]);
        int st = 0;
        waitpid(pid, &st, 0);
        fprintf(out, "%d ", WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
        for (ssize_t k = 0; k < n; k++) fprintf(out, "%02x", (unsigned char)captured[k]);
        fputc('\n', out);
    }
    fclose(out);
    _exit(0);
}
