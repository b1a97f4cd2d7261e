/* Paths that end in SIGABRT: abort(), a failed assert() and the stack protector's report (called
 * here directly, as a smashed canary calls it); one input byte. stdout is a pipe in a replay, so what printf buffered before abort() is
 * lost natively. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

extern void __stack_chk_fail(void);

int main(void)
{
    unsigned char c;
    if (read(0, &c, 1) != 1)
        return 3;
    if (c == 'a') {
        printf("aborting\n");
        abort();
    }
    assert(c != 'b' && "b is refused");
    if (c == 's')
        __stack_chk_fail();
    if (c >= 0xf0)
        return c - 0xf0;
    puts(c < 'a' ? "low" : "high");
    return 0;
}
