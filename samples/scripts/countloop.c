/* A loop counting characters of a 16-byte input: the path count grows with every byte (the shape
 * Veritesting merges). */
#include <stdio.h>
#include <unistd.h>

int main(void) {
    char s[16];
    if (read(0, s, 16) != 16)
        return 2;
    int a = 0, b = 0;
    for (int i = 0; i < 16; i++) {
        if (s[i] == 'A')
            a++;
        else if (s[i] == 'B')
            b++;
    }
    if (a == 9 && b == 7)
        puts("counted");
    else
        puts("no");
    return 0;
}
