// Prints what System.Reflection.Metadata reads from an assembly's portable PDB (embedded or
// beside it), one fact a line, tab-separated, for the Rust reader's oracle test:
//   source  embedded | <path of the .pdb>
//   id      <the #Pdb stream's 20-byte id, hex>
//   sp      <method token> <IL offset> <start line> <start col> <end line> <end col> <hidden 0|1> <document name>
//   sm      <MoveNext token> <kickoff token>
// Methods in MethodDebugInformation order, points in blob order. With no argument it
// prints its own (embedded) PDB. A few shapes a reader must get right live below.
using System.Reflection.Metadata;
using System.Reflection.Metadata.Ecma335;
using System.Reflection.PortableExecutable;
using System.Text;

namespace PdbOracle;

public static class Program
{
    public static int Main(string[] args)
    {
        var dll = args.Length > 0 ? args[0] : typeof(Program).Assembly.Location;
        using var pe = new PEReader(File.OpenRead(dll));
        if (!pe.TryOpenAssociatedPortablePdb(dll, p => File.Exists(p) ? File.OpenRead(p) : null,
                out var provider, out var pdbPath) || provider is null)
        {
            Console.Error.WriteLine($"PdbOracle: no portable PDB for {dll}");
            return 2;
        }
        using (provider)
        {
            var md = provider.GetMetadataReader();
            var o = new StringBuilder();
            o.Append("source\t").Append(pdbPath ?? "embedded").Append('\n');
            o.Append("id\t").Append(Convert.ToHexString(md.DebugMetadataHeader!.Id.ToArray()).ToLowerInvariant()).Append('\n');
            foreach (var h in md.MethodDebugInformation)
            {
                var token = MetadataTokens.GetToken(h.ToDefinitionHandle());
                var info = md.GetMethodDebugInformation(h);
                foreach (var sp in info.GetSequencePoints())
                {
                    var doc = md.GetString(md.GetDocument(sp.Document).Name);
                    o.Append($"sp\t0x{token:x8}\t{sp.Offset}\t{sp.StartLine}\t{sp.StartColumn}\t{sp.EndLine}\t{sp.EndColumn}\t{(sp.IsHidden ? 1 : 0)}\t{doc}\n");
                }
                var kickoff = info.GetStateMachineKickoffMethod();
                if (!kickoff.IsNil)
                {
                    o.Append($"sm\t0x{token:x8}\t0x{MetadataTokens.GetToken(kickoff):x8}\n");
                }
            }
            Console.Out.Write(o.ToString());
        }
        // Keep the shapes below compiled in and reachable.
        if (args.Length > 1)
        {
            Shapes.Run().GetAwaiter().GetResult();
        }
        return 0;
    }
}

/// Code whose sequence points exercise the reader: an async and an iterator state machine,
/// a lambda, a method spanning two documents (`#line`), hidden points (a switch, a using).
public static class Shapes
{
    public static async Task<int> Run()
    {
        var sum = 0;
        foreach (var x in Numbers(3))
        {
            sum += x;
        }
        await Task.Yield();
        Func<int, int> twice = v => v * 2;
        sum = twice(sum);
        return sum + TwoFiles(sum) + Switch(sum);
    }

    public static IEnumerable<int> Numbers(int n)
    {
        for (var i = 0; i < n; i++)
        {
            yield return i;
        }
    }

    public static int TwoFiles(int v)
    {
        var a = v + 1;
#line 200 "Elsewhere.cs"
        var b = a * 3;
#line default
        return a + b;
    }

    public static int Switch(int v)
    {
        using var s = new MemoryStream();
        return v switch
        {
            0 => 1,
            1 => 2,
            _ => (int)s.Length,
        };
    }
}
