/* Reads the file A line by line with fgets into a small buffer: counts lines, long lines (split
 * by the buffer) and lines holding a 'Q'. The exit code is the number of lines. */
#include <stdio.h>
#include <string.h>

int main(void) {
    FILE *f = fopen("A", "r");
    if (!f)
        return 100;
    char buf[4];
    int lines = 0, pieces = 0, q = 0;
    while (fgets(buf, sizeof buf, f)) {
        pieces++;
        if (strchr(buf, '\n'))
            lines++;
        if (strchr(buf, 'Q'))
            q++;
    }
    printf("%d %d %d %d\n", lines, pieces, q, feof(f) != 0);
    fclose(f);
    return lines;
}
