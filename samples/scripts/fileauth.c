/* The key is read from a file named on the command line; checked with a rolling sum. */
#include <stdio.h>

int main(int argc, char **argv) {
    FILE *f = fopen(argc > 1 ? argv[1] : "key.txt", "rb");
    if (!f) {
        puts("no key file");
        return 2;
    }
    unsigned char k[6];
    if (fread(k, 1, 6, f) != 6) {
        puts("short key");
        return 1;
    }
    unsigned int h = 7;
    for (int i = 0; i < 6; i++) {
        if (k[i] < '0' || k[i] > 'z') {
            puts("bad key");
            return 1;
        }
        h = h * 31 + k[i];
    }
    if (h == 0xf89a47bfu && k[0] == 'K')
        puts("key accepted");
    else
        puts("bad key");
    return 0;
}
