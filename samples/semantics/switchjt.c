/* a dense switch (a jump table at -O0 and -O2) over an input byte */
#include <stdio.h>
#include <unistd.h>
int main(void) {
    unsigned char c = 0;
    if (read(0, &c, 1) != 1) return 2;
    int r;
    switch (c) {
    case 'a': r = 3; break;   case 'b': r = 9; break;   case 'c': r = 4; break;
    case 'd': r = 1; break;   case 'e': r = 7; break;   case 'f': r = 2; break;
    case 'g': r = 8; break;   case 'h': r = 6; break;   case 'i': r = 5; break;
    case 'j': r = 3; break;   case 'k': r = 10; break;  case 'l': r = 11; break;
    default: r = 0;
    }
    printf("%d\n", r);
    return r;
}
