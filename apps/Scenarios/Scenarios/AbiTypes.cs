namespace Scenarios;

/// <summary>16 bytes, two integers: passed in two general-purpose registers on SysV x64.</summary>
public readonly record struct S16(long A, long B);

/// <summary>24 bytes: passed and returned in memory on SysV x64.</summary>
public readonly record struct S24(long A, long B, long C);

/// <summary>16 bytes, one double and one integer: one SSE and one general-purpose register.</summary>
public readonly record struct SMix(double D, long L);

/// <summary>16 bytes of four floats: two SSE registers.</summary>
public readonly record struct SF4(float X, float Y, float Z, float W);
