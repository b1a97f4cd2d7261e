/* A stack buffer filled by read() past its end: the saved return address comes from the input. */
#include <stdio.h>
#include <unistd.h>

void win(void) {
    write(1, "you win\n", 8);
    _exit(0);
}

__attribute__((noinline)) void vuln(void) {
    char buf[16];
    read(0, buf, 64);
}

int main(void) {
    vuln();
    puts("bye");
    return 0;
}
