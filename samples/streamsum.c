/* Reading stdin to its end the ways C programs do (C11 7.21.7.1 fgetc, 7.21.8.1 fread, 7.21.10.2
 * feof), then printing numbers computed from every byte: a hash with %u and its top byte with %x.
 * The loops end on the stream's end-of-file indicator, as glibc's feof_unlocked macro reads it
 * from the FILE's flags; the numbers have thousands of values (printf forks once per text length). */
#include <stdio.h>

int main(void) {
    unsigned char buf[64];
    unsigned long total = 0;
    size_t n, got = 0;
    int c;
    /* the first two bytes with getc_unlocked (glibc: a macro over the FILE's buffer, __uflow) */
    while (got < 2 && (c = getc_unlocked(stdin)) != EOF) {
        total = total * 251 + (unsigned)c;
        got++;
    }
    /* the rest with fread until the end-of-file flag is set */
    do {
        n = fread(buf, 1, sizeof buf, stdin);
        for (size_t i = 0; i < n; i++)
            total = total * 251 + buf[i];
        got += n;
    } while (!feof_unlocked(stdin) && !ferror_unlocked(stdin));
    if (getchar() != EOF || !feof(stdin))     /* at the end it stays at the end */
        return 3;
    unsigned int h = (unsigned int)(total * 2654435761u);
    printf("%zu %u %x\n", got, h, h >> 24);
    return got > 2 ? 0 : 1;
}
