/* Values passed through the shell: popen of an echo command read back with fgets, and system of
 * an echo redirected into a file read back with fscanf. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(void)
{
    char in[2], cmd[128], line[64] = "", name[64];
    if (read(0, in, 2) != 2)
        return 9;
    snprintf(cmd, sizeof cmd, "echo %d\n", (in[0] - '0') * 3);
    FILE *p = popen(cmd, "r");
    if (p == NULL)
        return 8;
    if (fgets(line, sizeof line, p) == NULL)
        line[0] = 0;
    int status = pclose(p);
    snprintf(name, sizeof name, "/tmp/shellecho.%d", (int)getpid());
    snprintf(cmd, sizeof cmd, "echo -n %c%c > %s", in[1], in[0], name);
    int rc = system(cmd);
    FILE *f = fopen(name, "r");
    int v = -1;
    if (f == NULL || fscanf(f, "%d", &v) != 1)
        v = -1;
    if (f)
        fclose(f);
    unlink(name);
    int first = atoi(line);
    printf("%d %d %d %d\n", first > 10, status, rc, v);
    return first == 21 && v == 17;
}
