/* argv[1] parsed by strtol (C standard 7.22.1.4): classify the number the argument holds. */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    if (argc < 2) return 9;
    char *end;
    long v = strtol(argv[1], &end, 10);
    if (end == argv[1]) { puts("no digits"); return 1; }
    if (*end != '\0') { puts("trailing text"); return 2; }
    if (v < 0) { puts("negative"); return 3; }
    if (v >= 50) { puts("large"); return 4; }
    if (v % 7 == 0) { puts("multiple of 7"); return 5; }
    puts("small");
    return 0;
}
