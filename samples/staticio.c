/* libc inside a statically linked program (built with -static and -static-pie as well): two
 * stdin bytes read through stdio, a heap copy compared and measured with the string functions
 * glibc selects at start-up (strlen, strcmp, memchr), output through printf, puts, fputs,
 * putchar and fwrite, and exit() with output still buffered. Exit codes 0-6. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *names[] = {"zero", "one", "two", "three"};

int main(void) {
    int a = getchar(), b = getchar();
    if (a == EOF || b == EOF) {
        puts("short");
        return 6;
    }
    char *s = malloc(4);
    s[0] = (char)a;
    s[1] = (char)b;
    s[2] = 0;
    size_t n = strlen(s);
    if (n == 0) {
        fputs("empty\n", stdout);
        exit(5);                         /* buffered output flushed by exit */
    }
    if (strcmp(s, "ok") == 0) {
        printf("ok %zu\n", n);
        return 0;
    }
    if (memchr(s, '-', n) != NULL) {
        putchar('-');
        putchar('\n');
        return 1;
    }
    if (a >= '0' && a <= '3') {
        printf("%s:%x\n", names[a - '0'], (unsigned)n);
        return 2;
    }
    if (n == 1) {
        fwrite("single\n", 1, 7, stdout);
        return 3;
    }
    printf("%c%c\n", a & 0x7f ? 'x' : 'y', 'z');
    return 4;
}
