/* A number read from a line and only compared, never printed (as an interpreter's `$1 > 2.5`
 * does): strtod's texts differ, the program's paths are few. C11 7.22.1.3. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

int main(void) {
    char line[32] = {0};
    if (!fgets(line, sizeof line, stdin)) return 2;
    char *end;
    errno = 0;
    double x = strtod(line, &end);
    if (end == line) { puts("not a number"); return 3; }
    if (errno == ERANGE) { puts("out of range"); return 4; }
    const char *size = x < 0 ? "negative" : x == 0 ? "zero" : x < 1 ? "a fraction" : x > 2.5 ? "big" : "small";
    int whole = x == (double)(long)x;
    printf("%s%s, %s\n", size, whole ? "" : " with a fraction part", *end ? "then more text" : "nothing after");
    return 0;
}
