/* printf's integer conversions as glibc writes them: %x %X %o %p (NULL and not), widths and
 * zero padding, %c of a byte above 0x7f, with a value chosen by one input byte. */
#include <stdio.h>
#include <unistd.h>

int main(void) {
    unsigned char c;
    if (read(0, &c, 1) != 1)
        return 9;
    int v = c > 'm' ? 255 : 8;
    printf("%x %X %o %04x %5o|%p %p|%c\n", v, v + 160, v, v, v, (void *)0, (void *)(long)(v * 16), v + 0xd0);
    return c > 'm';
}
