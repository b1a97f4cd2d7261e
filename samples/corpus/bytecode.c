/* A tiny accumulator bytecode interpreter: the two input bytes are the program (low 3 bits are
 * the opcode, the rest the operand), dispatched through a switch (a jump table at -O2). */
#include <unistd.h>
int main(void) {
    unsigned char code[2];
    if (read(0, code, 2) != 2) return 1;
    unsigned acc = 1;
    for (int pc = 0; pc < 2; pc++) {
        unsigned op = code[pc] & 7, arg = code[pc] >> 3;
        switch (op) {
        case 0: acc += arg; break;
        case 1: acc -= arg; break;
        case 2: acc *= arg; break;
        case 3: acc ^= arg; break;
        case 4: acc <<= (arg & 3); break;
        case 5: acc = arg ? acc / arg : acc; break;
        case 6: if (acc == arg) return 7; break;
        default: return 8;
        }
    }
    return acc == 0 ? 2 : acc < 16 ? 3 : acc < 256 ? 4 : 5;
}
