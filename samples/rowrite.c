/* Stores into read-only pages: through a pointer that selects a writable buffer or a const table
   (a symbolic address spanning both), and into a string literal at a constant address on one
   input. Natively both die with SIGSEGV. */
#include <stdio.h>
#include <unistd.h>
static const char msg[16] = "hello, world";
static char buf[16] = "mutable";
int main(void) {
    unsigned char in[2];
    if (read(0, in, 2) != 2) return 2;
    if (in[0] == 'L') {
        char *lit = (char *)"literal";
        lit[0] = 'L';
        puts(lit);
        return 3;
    }
    char *p = in[0] < 128 ? buf : (char *)msg;
    p[in[1] % 16] = 'x';
    puts(buf);
    return 0;
}
