/* Logic-bomb style symbolic memory over a big stack array: a 1024-int array holding a
   permutation, read once at an input index (l1), at the value read there (l2), and along a
   chain of eight hops (ln); the bomb goes off when the end of the chain is a chosen value. */
#include <stdio.h>
#include <unistd.h>
#define N 1024
int main(void) {
    unsigned char in[2];
    if (read(0, in, 2) != 2) return 2;
    int a[N];
    for (int i = 0; i < N; i++) a[i] = (i * 389 + 7) % N;
    int x = (in[0] | in[1] << 8) % N;
    if (a[x] == 500) { puts("l1"); return 1; }
    if (a[a[x]] == 500) { puts("l2"); return 2; }
    int j = x;
    for (int h = 0; h < 8; h++) j = a[j];
    if (j == 500) { puts("ln"); return 3; }
    puts("none");
    return 0;
}
