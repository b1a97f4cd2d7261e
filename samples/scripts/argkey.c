/* A key given as argv[1]: each character mixed with its position must equal a stored table. */
#include <stdio.h>
#include <string.h>

static const unsigned char want[8] = {0x4a, 0x60, 0x76, 0x6e, 0x3a, 0x73, 0x34, 0x7f};

void win(void) { puts("Access granted"); }
void lose(void) { puts("Access denied"); }

int main(int argc, char **argv) {
    if (argc != 2 || strlen(argv[1]) != 8) {
        lose();
        return 1;
    }
    for (int i = 0; i < 8; i++)
        if (((unsigned char)argv[1][i] ^ (unsigned char)(3 * i + 5)) != want[i]) {
            lose();
            return 1;
        }
    win();
    return 0;
}
