/* A computed goto whose target is a label plus an offset from a table, most offsets landing inside
 * the instructions after the label (an opcode invalid in 64-bit mode, ud2, hlt, int3 inside the
 * immediates of movs), and a 16-byte SSE load from an address that is not 16-byte aligned. Natively
 * the bad ones die of SIGILL, SIGSEGV or SIGTRAP; the others print "through". */
#include <stdio.h>
#include <unistd.h>

static const int offs[10] = {0, 1, 5, 6, 10, 11, 15, 16, 20, 21};

__attribute__((noinline)) static void load16(const char *p) {
    __asm__ volatile("movaps (%0), %%xmm0" : : "r"(p) : "xmm0");
}

int main(void) {
    static void *const where[2] = {&&start, &&other};
    static char buf[32] __attribute__((aligned(16)));
    unsigned char c;
    if (read(0, &c, 1) != 1) return 1;
    c &= 0x7f;
    if (c == 0x7f) {
        load16(buf + 1);
        return 3;
    }
    volatile int pick = c > 0x7f;       /* never: keeps both labels' addresses taken */
    goto *(void *)((char *)where[pick] + offs[c % 10]);
start:
    __asm__ volatile("movl $0x90900b0f, %%eax\n\t"   /* +1: ud2 */
                     "movl $0x909090f4, %%eax\n\t"   /* +6: hlt, privileged */
                     "movl $0x909090cc, %%eax\n\t"   /* +11: int3 */
                     "movl $0x90909006, %%eax\n\t"   /* +16: an opcode invalid in 64-bit mode */
                     "movl $0x90909090, %%eax\n\t"   /* +21: nops */
                     ::: "eax");
    puts("through");
    return 0;
other:
    puts("other");
    return 5;
}
