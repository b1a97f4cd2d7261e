/* Character classification (C standard 7.4) through <ctype.h>: glibc answers isalpha, isdigit,
 * isspace and isupper from its locale table (__ctype_b_loc) and tolower from another
 * (__ctype_tolower_loc, or a call at -O0). Exit: letters + 4 * digits + 16 * spaces, plus 64 if an
 * upper-case letter lower-cases to 'q'. */
#include <ctype.h>
#include "harness.h"

int main(void) {
    char buf[M + 1];
    size_t n;
    int bad = read_input(buf, &n);
    if (bad) return bad;
    int letters = 0, digits = 0, spaces = 0, q = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)buf[i];
        if (isalpha(c)) letters++;
        else if (isdigit(c)) digits++;
        else if (isspace(c)) spaces++;
        if (isupper(c) && tolower(c) == 'q') q = 64;
    }
    return letters + 4 * digits + 16 * spaces + q;
}
