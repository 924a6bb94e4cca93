using System.Reflection;
using System.Reflection.Emit;
using System.Runtime.CompilerServices;

namespace Scenarios;

/// <summary>
/// `emitted`: builds `Emitted.Adder.Add(int, int)` with Reflection.Emit in a collectible
/// dynamic assembly (no image on disk or in memory: a profiler names it through the
/// runtime's metadata importer) and calls it `calls` times.
/// </summary>
public static class EmittedScenario
{
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int Run(ScenarioArgs args)
    {
        int calls = args.NamedInt("calls", 1000);
        var assembly = AssemblyBuilder.DefineDynamicAssembly(
            new AssemblyName("Emitted"), AssemblyBuilderAccess.RunAndCollect);
        var module = assembly.DefineDynamicModule("Emitted");
        var type = module.DefineType(
            "Emitted.Adder", TypeAttributes.Public | TypeAttributes.Sealed | TypeAttributes.Abstract);
        var method = type.DefineMethod(
            "Add", MethodAttributes.Public | MethodAttributes.Static, typeof(int), [typeof(int), typeof(int)]);
        var il = method.GetILGenerator();
        il.Emit(OpCodes.Ldarg_0);
        il.Emit(OpCodes.Ldarg_1);
        il.Emit(OpCodes.Add);
        il.Emit(OpCodes.Ret);
        var add = type.CreateType().GetMethod("Add")!.CreateDelegate<Func<int, int, int>>();
        int sum = 0;
        for (int i = 0; i < calls; i++)
        {
            sum = add(sum, 1);
        }
        Results.Print(("calls", calls), ("sum", sum));
        return 0;
    }
}
