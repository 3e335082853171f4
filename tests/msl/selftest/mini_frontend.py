# Stand-in for the MSL frontend's rewrites, for the shim self-test only: strips [[...]], turns
# kernel-scope `threadgroup T x[N];` into threadgroup_static, adds tmps_sim_rt and a cast probe.
import re, sys
src = open(sys.argv[1]).read()
src = re.sub(r'\[\[[^\]]*\]\]', '', src)
n = [0]
def tg(m):
    n[0] += 1
    return f'{m.group(1)}auto& {m.group(3)} = ::tmps_sim::threadgroup_static<{m.group(2)}{m.group(4)}>({n[0]}, __LINE__);'
src = re.sub(r'^(\s+)threadgroup\s+([\w:]+)\s+(\w+)((?:\[[^\]]+\])*);', tg, src, flags=re.M)
out = '#include <metal_stdlib>\n#line 1 "%s"\n' % sys.argv[1] + src
if '--bare' not in sys.argv:
    out += '\nextern "C" const tmps_sim_runtime* tmps_sim_rt = nullptr;\n'
    out += 'static void tmps_probe(void* p) { (void)(device float*)p; (void)(threadgroup float*)p; (void)(constant float*)p; }\n'
sys.stdout.write(out)
