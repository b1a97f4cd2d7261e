/* A file named on the command line read as stdin (freopen), its first bytes copied into a
 * temporary file that is cut to two bytes (ftruncate) and read back. */
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc > 1 && !freopen(argv[1], "r", stdin)) {
        puts("cannot open");
        return 2;
    }
    char buf[8];
    size_t n = fread(buf, 1, sizeof buf, stdin);
    FILE *t = tmpfile();
    if (!t) return 3;
    fwrite(buf, 1, n, t);
    fflush(t);
    if (ftruncate(fileno(t), 2) != 0) return 4;
    rewind(t);
    char back[8];
    size_t m = fread(back, 1, sizeof back, t);
    printf("read %zu, kept %zu", n, m);
    if (m == 2 && back[0] == 'x') printf(" starting with x");
    putchar('\n');
    return 0;
}
