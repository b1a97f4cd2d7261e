/* A child process hands its result to its parent through System V shared memory: one segment
 * attached before fork, one the child creates by key and the parent attaches after the child
 * exits; the parent removes both. */
#include <stdio.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/shm.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void)
{
    char in[3] = {0};
    if (read(0, in, 2) != 2)
        return 9;
    int early = shmget(IPC_PRIVATE, 64, IPC_CREAT | 0600);
    if (early < 0)
        return 8;
    char *shared = shmat(early, NULL, 0);
    key_t key = 0x5eed0000 + getpid() % 65536;
    pid_t kid = fork();
    if (kid == 0) {
        shared[0] = in[0] == 'x' ? 'X' : in[0];
        shmdt(shared);
        int late = shmget(key, 16, IPC_CREAT | 0600);
        char *p = shmat(late, NULL, 0);
        strcpy(p, in[1] == '7' ? "seven" : "other");
        _exit(0);
    }
    waitpid(kid, NULL, 0);
    int late = shmget(key, 16, 0);
    char *q = late < 0 ? NULL : shmat(late, NULL, 0);
    printf("%c %s\n", shared[0], q ? q : "(none)");
    int bomb = shared[0] == 'X' && q && strcmp(q, "seven") == 0;
    shmctl(early, IPC_RMID, NULL);
    if (late >= 0)
        shmctl(late, IPC_RMID, NULL);
    return bomb;
}
