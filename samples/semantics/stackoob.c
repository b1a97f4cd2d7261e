/* out-of-bounds stack reads: index from input may be negative */
#include <stdio.h>
#include <unistd.h>
int main(void) {
    char in = 0;
    if (read(0, &in, 1) != 1) return 2;
    int a[5] = {1, 2, 3, 4, 0};
    int b[5] = {5, 6, 7, 8, 9};
    int x = (in - '0') % 5;
    if (b[a[x]] == 9) { puts("nine"); return 1; }
    puts("other");
    return 0;
}
