/* A value passed from a child process to its parent through a file: the child writes
 * three times argv[1]'s number into a file named after the parent's pid, the parent waits
 * for it, reads the number back and decides on it. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    char name[64];
    if (argc < 2)
        return 2;
    snprintf(name, sizeof name, "/tmp/childfile.%d", (int)getpid());
    pid_t kid = fork();
    if (kid == 0) {
        FILE *f = fopen(name, "w");
        if (f == NULL)
            _exit(5);
        fprintf(f, "%d\n", atoi(argv[1]) * 3);
        fclose(f);
        exit(0);
    }
    int status = 0, v = 0;
    if (wait(&status) != kid || WEXITSTATUS(status) != 0)
        return 6;
    FILE *f = fopen(name, "r");
    if (f == NULL || fscanf(f, "%d", &v) != 1) {
        puts("nothing");
        return 4;
    }
    fclose(f);
    unlink(name);
    if (v == 21) {
        puts("seven");
        return 1;
    }
    printf("%s\n", v > 10 ? "big" : "small");
    return 0;
}
