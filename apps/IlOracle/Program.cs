// Prints what System.Reflection.Metadata reads of an assembly's method bodies, one fact a
// line, tab-separated, for the Rust IL reader's oracle test:
//   op  <value, 4 hex digits> <name> <operand type> <pops> <pushes>   (the opcode table)
//   m   <method token> <max stack> <locals token> <init locals 0|1> <code size> <body size>
//   i   <offset> <name> <operand>
//   eh  <kind> <try offset> <try length> <handler offset> <handler length> <catch type token | filter offset | 0>
// Operands: 1-byte ones as 0xNN; ldarg/ldloc-style indexes and ldc.i4/ldc.i8 in decimal;
// ldc.r4/ldc.r8 as their bits (0x…); tokens 0x%08x; branch targets as absolute offsets,
// switch targets comma-separated. Methods in MethodDef order, those with a body only.
// With no argument it prints its own bodies. The shapes below give the reader the
// forms a compiler writes less often.
using System.Reflection;
using System.Reflection.Emit;
using System.Reflection.Metadata;
using System.Reflection.Metadata.Ecma335;
using System.Reflection.PortableExecutable;
using System.Text;

namespace IlOracle;

public static class Program
{
    public static int Main(string[] args)
    {
        var dll = args.Length > 0 ? args[0] : typeof(Program).Assembly.Location;
        var one = new OpCode?[0x100];
        var two = new OpCode?[0x100];
        var o = new StringBuilder();
        foreach (var f in typeof(OpCodes).GetFields(BindingFlags.Public | BindingFlags.Static))
        {
            var op = (OpCode)f.GetValue(null)!;
            if (op.OpCodeType == OpCodeType.Nternal)
            {
                continue; // prefix1…7, prefixref: not instructions
            }
            var v = (ushort)op.Value;
            if (op.Size == 1) one[v] = op; else two[v & 0xFF] = op;
            o.Append($"op\t{v:x4}\t{op.Name}\t{op.OperandType}\t{Pops(op.StackBehaviourPop)}\t{Pushes(op.StackBehaviourPush)}\n");
        }
        using var pe = new PEReader(File.OpenRead(dll));
        var md = pe.GetMetadataReader();
        foreach (var h in md.MethodDefinitions)
        {
            var def = md.GetMethodDefinition(h);
            if (def.RelativeVirtualAddress == 0 || (def.ImplAttributes & MethodImplAttributes.CodeTypeMask) != MethodImplAttributes.IL)
            {
                continue;
            }
            var body = pe.GetMethodBody(def.RelativeVirtualAddress);
            var il = body.GetILBytes()!;
            var token = MetadataTokens.GetToken(h);
            var locals = body.LocalSignature.IsNil ? 0 : MetadataTokens.GetToken(body.LocalSignature);
            o.Append($"m\t0x{token:x8}\t{body.MaxStack}\t0x{locals:x8}\t{(body.LocalVariablesInitialized ? 1 : 0)}\t{il.Length}\t{body.Size}\n");
            var at = 0;
            while (at < il.Length)
            {
                var start = at;
                OpCode op;
                if (il[at] == 0xFE)
                {
                    op = two[il[at + 1]] ?? throw new InvalidDataException($"0xFE{il[at + 1]:x2} at {at} in 0x{token:x8}");
                    at += 2;
                }
                else
                {
                    op = one[il[at]] ?? throw new InvalidDataException($"0x{il[at]:x2} at {at} in 0x{token:x8}");
                    at += 1;
                }
                string operand;
                switch (op.OperandType)
                {
                    case OperandType.InlineNone: operand = ""; break;
                    case OperandType.ShortInlineI:
                    case OperandType.ShortInlineVar: operand = $"0x{il[at]:x2}"; at += 1; break;
                    case OperandType.InlineVar: operand = BitConverter.ToUInt16(il, at).ToString(); at += 2; break;
                    case OperandType.InlineI: operand = BitConverter.ToInt32(il, at).ToString(); at += 4; break;
                    case OperandType.InlineI8: operand = BitConverter.ToInt64(il, at).ToString(); at += 8; break;
                    case OperandType.ShortInlineR: operand = $"0x{BitConverter.ToUInt32(il, at):x8}"; at += 4; break;
                    case OperandType.InlineR: operand = $"0x{BitConverter.ToUInt64(il, at):x16}"; at += 8; break;
                    case OperandType.ShortInlineBrTarget: operand = (at + 1 + (sbyte)il[at]).ToString(); at += 1; break;
                    case OperandType.InlineBrTarget: operand = (at + 4 + BitConverter.ToInt32(il, at)).ToString(); at += 4; break;
                    case OperandType.InlineSwitch:
                        {
                            var n = BitConverter.ToInt32(il, at);
                            at += 4;
                            var next = at + 4 * n;
                            var targets = new string[n];
                            for (var k = 0; k < n; k++)
                            {
                                targets[k] = (next + BitConverter.ToInt32(il, at + 4 * k)).ToString();
                            }
                            operand = string.Join(",", targets);
                            at = next;
                            break;
                        }
                    default: operand = $"0x{BitConverter.ToUInt32(il, at):x8}"; at += 4; break;
                }
                o.Append($"i\t{start}\t{op.Name}\t{operand}\n");
            }
            foreach (var r in body.ExceptionRegions)
            {
                var extra = r.Kind switch
                {
                    ExceptionRegionKind.Catch => MetadataTokens.GetToken(r.CatchType),
                    ExceptionRegionKind.Filter => r.FilterOffset,
                    _ => 0,
                };
                o.Append($"eh\t{r.Kind}\t{r.TryOffset}\t{r.TryLength}\t{r.HandlerOffset}\t{r.HandlerLength}\t0x{extra:x8}\n");
            }
        }
        Console.Out.Write(o.ToString());
        if (args.Length > 1)
        {
            Console.Error.WriteLine(Shapes.Run(args.Length));
        }
        return 0;
    }

    static string Pops(StackBehaviour s) => s switch
    {
        StackBehaviour.Pop0 => "0",
        StackBehaviour.Varpop => "var",
        _ => s.ToString().Split('_').Length.ToString(),
    };

    static string Pushes(StackBehaviour s) => s switch
    {
        StackBehaviour.Push0 => "0",
        StackBehaviour.Push1_push1 => "2",
        StackBehaviour.Varpush => "var",
        _ => "1",
    };
}

/// Bodies in the forms a reader must get right: a filter, nested try/finally, a switch,
/// branches too far for the short form, a try block too long for a small exception
/// section (a fat one), localloc, ldc.r4/ldc.r8, ldc.i8.
public static class Shapes
{
    public static string Run(int n)
    {
        var sb = new StringBuilder();
        sb.Append(Filter(n)).Append(Switch(n)).Append(Far(n)).Append(Floats(n)).Append(Stack(n));
        sb.Append(Big(n));
        return sb.ToString();
    }

    public static int Filter(int n)
    {
        try
        {
            try
            {
                if (n > 100) throw new InvalidOperationException("x");
                return n;
            }
            finally
            {
                n++;
            }
        }
        catch (InvalidOperationException e) when (e.Message == "x")
        {
            return -1;
        }
        catch (Exception)
        {
            return -2;
        }
    }

    public static string Switch(int n) => n switch
    {
        0 => "zero",
        1 => "one",
        2 => "two",
        3 => "three",
        4 => "four",
        5 => "five",
        _ => "many",
    };

    public static long Far(int n)
    {
        long a = 0;
        for (var i = 0; i < n; i++)
        {
            a += i * 3L; a ^= a << 7; a += i * 5L; a ^= a >> 3; a += i * 7L; a ^= a << 11;
            a += i * 11L; a ^= a >> 5; a += i * 13L; a ^= a << 13; a += i * 17L; a ^= a >> 7;
            a += i * 19L; a ^= a << 17; a += i * 23L; a ^= a >> 11; a += i * 29L; a ^= a << 19;
            a += 0x1234_5678_9ABC_DEF0L;
        }
        return a;
    }

    public static double Floats(int n) => n * 1.5f + n * 2.25 + float.NaN.GetHashCode() + double.Epsilon;

    public static unsafe int Stack(int n)
    {
        var p = stackalloc int[n + 1];
        p[n] = n;
        return p[n];
    }

    // A try block over 255 bytes: its clauses need a fat exception section.
    public static int Big(int n)
    {
        var total = 0;
        try
        {
            total += Far(n) > 0 ? 1 : 0;
            total += Switch(n + 0).Length * 1 + (int)(Far(0) & 0xF);
            total += Switch(n + 1).Length * 2 + (int)(Far(1) & 0xF);
            total += Switch(n + 2).Length * 3 + (int)(Far(2) & 0xF);
            total += Switch(n + 3).Length * 4 + (int)(Far(0) & 0xF);
            total += Switch(n + 4).Length * 5 + (int)(Far(1) & 0xF);
            total += Switch(n + 5).Length * 6 + (int)(Far(2) & 0xF);
            total += Switch(n + 6).Length * 7 + (int)(Far(0) & 0xF);
            total += Switch(n + 7).Length * 1 + (int)(Far(1) & 0xF);
            total += Switch(n + 8).Length * 2 + (int)(Far(2) & 0xF);
            total += Switch(n + 9).Length * 3 + (int)(Far(0) & 0xF);
            total += Switch(n + 10).Length * 4 + (int)(Far(1) & 0xF);
            total += Switch(n + 11).Length * 5 + (int)(Far(2) & 0xF);
            total += Switch(n + 12).Length * 6 + (int)(Far(0) & 0xF);
            total += Switch(n + 13).Length * 7 + (int)(Far(1) & 0xF);
            total += Switch(n + 14).Length * 1 + (int)(Far(2) & 0xF);
            total += Switch(n + 15).Length * 2 + (int)(Far(0) & 0xF);
            total += Switch(n + 16).Length * 3 + (int)(Far(1) & 0xF);
            total += Switch(n + 17).Length * 4 + (int)(Far(2) & 0xF);
            total += Switch(n + 18).Length * 5 + (int)(Far(0) & 0xF);
            total += Switch(n + 19).Length * 6 + (int)(Far(1) & 0xF);
            total += Switch(n + 20).Length * 7 + (int)(Far(2) & 0xF);
            total += Switch(n + 21).Length * 1 + (int)(Far(0) & 0xF);
            total += Switch(n + 22).Length * 2 + (int)(Far(1) & 0xF);
            total += Switch(n + 23).Length * 3 + (int)(Far(2) & 0xF);
            total += Switch(n + 24).Length * 4 + (int)(Far(0) & 0xF);
            total += Switch(n + 25).Length * 5 + (int)(Far(1) & 0xF);
            total += Switch(n + 26).Length * 6 + (int)(Far(2) & 0xF);
            total += Switch(n + 27).Length * 7 + (int)(Far(0) & 0xF);
            total += Switch(n + 28).Length * 1 + (int)(Far(1) & 0xF);
            total += Switch(n + 29).Length * 2 + (int)(Far(2) & 0xF);
            total += Switch(n + 30).Length * 3 + (int)(Far(0) & 0xF);
            total += Switch(n + 31).Length * 4 + (int)(Far(1) & 0xF);
            total += Switch(n + 32).Length * 5 + (int)(Far(2) & 0xF);
            total += Switch(n + 33).Length * 6 + (int)(Far(0) & 0xF);
            total += Switch(n + 34).Length * 7 + (int)(Far(1) & 0xF);
            total += Switch(n + 35).Length * 1 + (int)(Far(2) & 0xF);
            total += Switch(n + 36).Length * 2 + (int)(Far(0) & 0xF);
            total += Switch(n + 37).Length * 3 + (int)(Far(1) & 0xF);
            total += Switch(n + 38).Length * 4 + (int)(Far(2) & 0xF);
            total += Switch(n + 39).Length * 5 + (int)(Far(0) & 0xF);
        }
        catch (Exception)
        {
            total = -1;
        }
        finally
        {
            total++;
        }
        return total;
    }
}
