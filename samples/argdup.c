/* A copy of argv[1] in a buffer sized by its length (the strdup idiom, C11 7.24.2.1 and 7.24.6.3:
 * malloc(strlen + 1)), printed with puts: angr's strlen searches the copy in chunks of 129 bytes,
 * past the copy's symbolic size. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    if (argc < 2) return 9;
    size_t n = strlen(argv[1]);
    char *p = malloc(n + 1);
    if (!p) return 8;
    memcpy(p, argv[1], n + 1);
    puts(p);
    return (int)strlen(p);
}
