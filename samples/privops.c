/* Privileged instructions in user mode, one per input byte value: reading and writing an I/O port
   (in, out) and clearing the interrupt flag (cli). Natively each dies with SIGSEGV (a general
   protection fault); angr runs them on. */
#include <stdio.h>
#include <unistd.h>
int main(void) {
    unsigned char in[1];
    if (read(0, in, 1) != 1) return 2;
    if (in[0] == 'i') {
        unsigned char v;
        __asm__ volatile("inb %%dx, %%al" : "=a"(v) : "d"((unsigned short)0x60));
        printf("port %d\n", v);
    }
    if (in[0] == 'o') __asm__ volatile("outb %%al, %%dx" : : "a"((unsigned char)1), "d"((unsigned short)0x80));
    if (in[0] == 'c') __asm__ volatile("cli");
    puts(in[0] < 'a' ? "upper" : "lower");
    return 0;
}
