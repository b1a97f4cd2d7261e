/* A pointer read from the input and dereferenced: it may be anything, so the access may fault in
 * the null page and in every unmapped gap of the address space. Eight bytes of stdin. */
#include <unistd.h>

int main(void) {
    char *p;
    if (read(0, &p, sizeof p) != sizeof p)
        return 9;
    return *p == 'x';
}
