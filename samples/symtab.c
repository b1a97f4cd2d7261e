/* A symbol table in the style of the seeds' m4 and make runs, for input templates: the input
 * (stdin, or the file named by argv[1]) holds definitions "d(X,N)" (X one byte, N one digit) and
 * references "$X". Definitions go into a small chained hash table of malloc'd entries; each
 * reference prints the symbol's value (0 if undefined); the exit code folds the values read. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>

#define BUCKETS 5
struct entry { unsigned char name; int value; struct entry *next; };
static struct entry *table[BUCKETS];

static void define(unsigned char name, int value) {
    struct entry *e = malloc(sizeof *e);
    if (!e) exit(8);
    e->name = name; e->value = value;
    e->next = table[name % BUCKETS];
    table[name % BUCKETS] = e;
}

static int lookup(unsigned char name) {
    for (struct entry *e = table[name % BUCKETS]; e; e = e->next)
        if (e->name == name) return e->value;
    return 0;
}

int main(int argc, char **argv) {
    char buf[64];
    int fd = argc > 1 ? open(argv[1], O_RDONLY) : 0;
    if (fd < 0) return 9;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    if (n <= 0) return 9;
    buf[n] = 0;
    int out = 0;
    for (char *p = buf; *p; p++) {
        if (p[0] == 'd' && p[1] == '(' && p[2] && p[3] == ',' && p[4] >= '0' && p[4] <= '9' && p[5] == ')') {
            define((unsigned char)p[2], p[4] - '0');
            p += 5;
        } else if (p[0] == '$' && p[1]) {
            int v = lookup((unsigned char)p[1]);
            printf("%d\n", v);
            out = out * 3 + v;
            p++;
        }
    }
    return out % 7;
}
