// cua-s1-prepare: placeholder until the processor pipeline lands.
int main() { return 1; }
