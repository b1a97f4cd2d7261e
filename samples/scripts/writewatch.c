/* Writes to a global state machine driven by input bytes; a script watches the writes with a
 * breakpoint and explores to the accepting state. */
#include <stdio.h>
#include <unistd.h>

int state_var;

int main(void) {
    unsigned char in[6];
    if (read(0, in, 6) != 6)
        return 2;
    for (int i = 0; i < 6; i++) {
        switch (state_var) {
        case 0: state_var = in[i] == 'o' ? 1 : 0; break;
        case 1: state_var = in[i] == 'p' ? 2 : 0; break;
        case 2: state_var = in[i] == 'e' ? 3 : 0; break;
        case 3: state_var = in[i] == 'n' ? 4 : 0; break;
        default: break;
        }
    }
    puts(state_var == 4 ? "accepted" : "refused");
    return 0;
}
