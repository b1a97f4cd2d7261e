/* A word counter in main that prints its count and exits with it: merged paths must print what
 * the program prints for each of their inputs ("%d\n" of the count, nothing else). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#ifndef M
#define M 6
#endif
int main(void) {
    char buf[M + 1] = {0};
    unsigned char len = 0;
    if (read(0, &len, 1) != 1 || read(0, buf, M) != M) return 100;
    if (len > M) return 101;
    buf[len] = 0;
    int words = 0, in = 0;
    for (const char *p = buf; *p; p++) {
        if (*p == ' ' || *p == '\n') in = 0;
        else if (!in) { in = 1; words++; }
    }
    printf("%d\n", words);
    exit(words);
}
