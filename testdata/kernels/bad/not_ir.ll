This is a plain text file, not LLVM IR.
 binary tail
