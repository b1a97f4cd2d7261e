/* Reading lines as POSIX describes getline and getdelim: the call grows the caller's buffer (here a
 * 2-byte malloc'd one) with realloc and updates its size, returns the bytes read including the
 * delimiter (a NUL inside a line counts too), and -1 at the end of input. First a record ending at
 * ';' with getdelim, then lines with getline into the same buffer. */
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
    size_t cap = 2;
    char *line = malloc(cap);
    if (line == NULL)
        return 9;
    ssize_t len = getdelim(&line, &cap, ';', stdin);
    if (len < 0) {
        printf("empty eof=%d\n", feof(stdin) != 0);
        free(line);
        return 3;
    }
    printf("record %zd [%.*s] semi=%d cap=%zu\n", len, (int)len, line, line[len - 1] == ';', cap);
    int lines = 0;
    unsigned sum = 0;
    while ((len = getline(&line, &cap, stdin)) != -1) {
        lines++;
        for (ssize_t i = 0; i < len; i++)
            sum = sum * 31 + (unsigned char)line[i];
        printf("line %zd %s cap=%zu\n", len, line[len - 1] == '\n' ? "nl" : "end", cap);
    }
    printf("lines=%d sum=%u eof=%d\n", lines, sum % 1000, feof(stdin) != 0);
    free(line);
    return lines;
}
