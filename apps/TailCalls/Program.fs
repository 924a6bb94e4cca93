/// `TailCalls [n=1000]`: calls that carry the IL `tail.` prefix.
///
/// 1. ping/pong: mutual tail recursion between two `int -> int` functions; the JIT can turn
///    these into fast tail calls (jumps). ping n calls pong (n-1) … down to 0, so there are
///    n + 1 entries: ping n/2 + 1 times and pong n/2 times for even n.
/// 2. hop/wide: hop (1 argument) tail-calls wide (9 arguments: 3 on the stack on x64 SysV),
///    which tail-calls hop again; a callee needing more stack arguments than its caller has
///    forces the runtime's tail-call-via-helper path. hop runs n + 1 times, wide n times.
///
/// Each chain ends in `bottom`, which records the stack depth it sees: small when the tail
/// calls really replaced their callers' frames, about n when they did not.
module TailCalls.Program

open System
open System.Diagnostics
open System.Reflection
open System.Runtime.CompilerServices

let mutable private pingCalls = 0
let mutable private pongCalls = 0
let mutable private hopCalls = 0
let mutable private wideCalls = 0
let mutable private depths: (string * int) list = []

[<MethodImpl(MethodImplOptions.NoInlining)>]
let bottom (chain: string) : int =
    depths <- (chain, StackTrace(false).FrameCount) :: depths
    0

[<MethodImpl(MethodImplOptions.NoInlining)>]
let rec ping (n: int) : int =
    pingCalls <- pingCalls + 1
    if n = 0 then bottom "ping" else pong (n - 1)

and [<MethodImpl(MethodImplOptions.NoInlining)>] pong (n: int) : int =
    pongCalls <- pongCalls + 1
    if n = 0 then bottom "pong" else ping (n - 1)

[<MethodImpl(MethodImplOptions.NoInlining)>]
let rec hop (n: int) : int64 =
    hopCalls <- hopCalls + 1
    if n = 0 then int64 (bottom "hop") else wide n 1L 2L 3L 4L 5L 6L 7L 8L

and [<MethodImpl(MethodImplOptions.NoInlining)>] wide
    (n: int)
    (a: int64)
    (b: int64)
    (c: int64)
    (d: int64)
    (e: int64)
    (f: int64)
    (g: int64)
    (h: int64)
    : int64 =
    wideCalls <- wideCalls + 1
    hop (n - 1 + int (a + b + c + d + e + f + g + h - 36L))

let private parseN (argv: string[]) =
    let args = argv |> Array.filter (fun a -> a <> "tailcall")
    match args with
    | [||] -> Some 1000
    | [| arg |] ->
        let text = if arg.StartsWith("n=", StringComparison.Ordinal) then arg.Substring 2 else arg
        match Int32.TryParse(text, Globalization.NumberStyles.None, Globalization.CultureInfo.InvariantCulture) with
        | true, n -> Some n
        | _ -> None
    | _ -> None

let private prefixes name =
    let m =
        Assembly.GetExecutingAssembly().GetType("TailCalls.Program")
            .GetMethod(name, BindingFlags.Static ||| BindingFlags.Public ||| BindingFlags.NonPublic)
    IlScan.tailPrefixes m

let private depthOf chain =
    depths |> List.tryFind (fun (c, _) -> c = chain) |> Option.map snd |> Option.defaultValue -1

[<EntryPoint>]
let main argv =
    match parseN argv with
    | None ->
        eprintfn "usage: dotnet TailCalls.dll [n=1000]"
        2
    | Some n ->
        let pingResult = ping n
        let hopResult = hop n
        let pingEnd = if n % 2 = 0 then "ping" else "pong"
        printfn "RESULT n=%d ping=%d pong=%d ping_pong_entries=%d expected_entries=%d" n pingCalls pongCalls (pingCalls + pongCalls) (n + 1)
        printfn "RESULT hop=%d wide=%d hop_wide_entries=%d" hopCalls wideCalls (hopCalls + wideCalls)
        printfn "RESULT ping_bottom_depth=%d hop_bottom_depth=%d results=%d" (depthOf pingEnd) (depthOf "hop") (int64 pingResult + hopResult)
        printfn "RESULT tail_prefixes_ping=%d tail_prefixes_pong=%d tail_prefixes_hop=%d tail_prefixes_wide=%d" (prefixes "ping") (prefixes "pong") (prefixes "hop") (prefixes "wide")
        0
