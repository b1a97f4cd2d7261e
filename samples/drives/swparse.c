/* A switch-based token scorer: each input byte adds to a score by a switch, then the program
 * prints a word chosen by the score ("acc big", "acc small", "acc none") with printf's %s, the word
 * read from a table at a computed index: printf gets a pointer to one of strings of different
 * lengths. */
#include <stdio.h>
#include <unistd.h>
#ifndef M
#define M 4
#endif
int main(void) {
    char buf[M];
    if (read(0, buf, M) != M) return 100;
    int acc = 0;
    for (int i = 0; i < M; i++) {
        switch (buf[i]) {
        case 'a': acc += 1; break;
        case 'b': acc += 4; break;
        case 'c': acc -= 1; break;
        case ';': i = M; break;
        default: break;
        }
    }
    static const char *const words[] = {"none", "small", "big"};
    int k = (acc > 0) + (acc > 6);          /* no branch: the word is chosen by a table index */
    printf("acc %s\n", words[k]);
    return k;
}
