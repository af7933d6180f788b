"""MuJoCo's MJCF schema: the attributes each element takes, the elements each contains.

MuJoCo checks a model against its schema before it compiles anything and refuses one that
breaks it ("Schema violation"): an attribute the element does not take (a typo such as
``mas="5"`` would otherwise leave the default density in charge of the mass), an element
its parent cannot contain, or a second copy of an element allowed once. :func:`check`
does the same, naming the file and line of the offending element.

Like MuJoCo, it does not look inside ``<frame>`` and ``<replicate>`` (MuJoCo expands them
after its schema check, so it accepts -- and ignores -- unknown attributes there), and it
sees included files as part of the including one.

:data:`TABLE` is MuJoCo 4.0's schema (``mujoco.mj_printSchema``), one entry per element:
its path from ``<mujoco>`` (``body`` and ``default`` nest in themselves: a body's child
body is ``body`` again, and ``body`` is also ``<worldbody>``, which takes no attributes),
`` ?`` when it may appear at most once in its parent, and its attributes (``-``: none).
tests/test_mjcf.py compares it with the installed MuJoCo's schema.
"""
from __future__ import annotations

import difflib
from functools import lru_cache

RECURSIVE = ("body", "default")  # elements that nest in themselves
EXPANDED = ("frame", "replicate")  # body contents MuJoCo checks only after expanding them

TABLE = """
mujoco                      model
compiler                    alignfree angle assetdir autolimits balanceinertia boundinertia
                            boundmass conflict coordinate discardvisual eulerseq fitaabb
                            fusestatic inertiafromgeom inertiagrouprange meshdir passthrough
                            savecanonical savecompiled saveinertial settotalmass strippath
                            texturedir usethread
compiler/lengthrange ?      accel interval inttotal maxforce mode timeconst timestep tolrange
                            useexisting uselimit
option                      actuatorgroupdisable ccd_iterations ccd_tolerance cone density
                            gravity impratio integrator iterations jacobian ls_iterations
                            ls_tolerance magnetic noslip_iterations noslip_tolerance o_friction
                            o_margin o_solimp o_solref sdf_initpoints sdf_iterations
                            sleep_tolerance solver timestep tolerance viscosity wind
option/flag ?               actuation autoreset clampctrl constraint contact damper diagexact
                            energy equality eulerdamp filterparent frictionloss fwdinv gravity
                            invdiscrete ipc island limit midphase multiccd nativeccd override
                            refsafe sensor sleep speculative spring warmstart
size                        memory nconmax njmax nkey nstack nuser_actuator nuser_body nuser_cam
                            nuser_geom nuser_jnt nuser_sensor nuser_site nuser_tendon nuserdata
statistic                   center extent meaninertia meanmass meansize
visual                      -
visual/global ?             azimuth bvactive cameraid elevation ellipsoidinertia fovy glow ipd
                            linewidth offheight offwidth orthographic realtime
visual/quality ?            numquads numslices numstacks offsamples shadowsize
visual/headlight ?          active ambient diffuse specular
visual/map ?                actuatortendon alpha fogend fogstart force haze shadowclip
                            shadowscale stiffness stiffnessrot torque zfar znear
visual/scale ?              actuatorlength actuatorwidth camera com connect constraint
                            contactheight contactwidth forcewidth framelength framewidth frustum
                            jointlength jointwidth light selectpoint slidercrank
visual/rgba ?               actuator actuatornegative actuatorpositive bv bvactive camera com
                            connect constraint contactforce contactfriction contactgap
                            contactpoint contacttorque crankbroken fog force frustum haze
                            inertia joint light rangefinder selectpoint slidercrank
default                     class
default/mesh ?              inertia maxhullvert scale
default/texture ?           builtin colorspace embed gridlayout gridsize height hflip mark
                            markrgb nchannel random rgb1 rgb2 type vflip width
default/material ?          emission metallic reflectance rgba roughness shininess specular
                            texrepeat texture texuniform
default/material/layer      role texture
default/joint ?             actuatorfrclimited actuatorfrcrange actuatorgravcomp armature axis
                            damping frictionloss group limited margin pos range ref
                            solimpfriction solimplimit solreffriction solreflimit springdamper
                            springref springyield stiffness type user
default/geom ?              adhesion axisangle castshadow conaffinity condim contype density
                            euler fitscale fluidcoef fluidshape friction fromto gap group hfield
                            margin mass material mesh pos priority quat rgba shellinertia size
                            solimp solmix solref surfacevel type user xyaxes zaxis
default/site ?              axisangle euler fromto group material mesh pos quat rgba size type
                            user xyaxes zaxis
default/camera ?            axisangle euler focal focalpixel fovy ipd mode output pos principal
                            principalpixel projection quat resolution sensorsize user xyaxes
                            zaxis
default/light ?             active ambient attenuation bulbradius castshadow cutoff diffuse dir
                            directional exponent intensity mode pos range softness specular type
default/pair ?              adhesion condim friction gap margin solimp solref solreffriction
default/equality ?          active solimp solref
default/tendon ?            actuatorfrclimited actuatorfrcrange armature damping frictionloss
                            group limited margin material range rgba solimpfriction solimplimit
                            solreffriction solreflimit springlength springyield stiffness user
                            width
default/general ?           actdim actearly actlimited actrange armature biasprm biastype
                            cranklength ctrllimited ctrlrange damping delay dynprm dyntype
                            ffrange forcelimited forcerange gainprm gaintype gear group
                            inheritrange input interp nsample user velrange
default/motor ?             armature cranklength ctrllimited ctrlrange damping delay
                            forcelimited forcerange gear group interp nsample user
default/position ?          armature cranklength ctrllimited ctrlrange damping dampratio delay
                            forcelimited forcerange gear group inheritrange interp kp kv nsample
                            timeconst user
default/velocity ?          armature cranklength ctrllimited ctrlrange damping delay
                            forcelimited forcerange gear group interp kv nsample user
default/intvelocity ?       actlimited actrange armature cranklength ctrllimited ctrlrange
                            damping dampratio delay forcelimited forcerange gear group
                            inheritrange interp kp kv nsample user
default/orientation ?       ctrlrange dampratio delay forcelimited forcerange group input interp
                            kp kv nsample user
default/pid ?               armature cranklength ctrllimited ctrlrange damping dampratio delay
                            ffrange forcelimited forcerange gear group imax inheritrange input
                            interp ki kp kv nsample posrange slewmax user velrange
default/damper ?            armature cranklength ctrlrange damping delay forcelimited forcerange
                            gear group interp kv nsample user
default/cylinder ?          area armature bias cranklength ctrllimited ctrlrange damping delay
                            diameter forcelimited forcerange gear group interp nsample timeconst
                            user
default/muscle ?            armature cranklength ctrllimited ctrlrange damping delay force
                            forcelimited forcerange fpmax fvmax gear group interp lmax lmin
                            nsample range scale timeconst user vmax
default/adhesion ?          ctrlrange delay forcelimited forcerange gain group interp nsample
                            user
default/dcmotor ?           armature cogging controller cranklength ctrllimited ctrlrange
                            damping delay gear group inductance input interp lugre motorconst
                            nominal nsample resistance saturation thermal user
extension                   -
extension/plugin            plugin
extension/plugin/instance   name
extension/plugin/instance/config key value
asset                       -
asset/mesh                  builtin class content_type face file inertia material maxhullvert
                            name normal params refpos refquat scale smoothnormal texcoord vertex
asset/mesh/plugin           instance plugin
asset/mesh/plugin/config    key value
asset/hfield                content_type elevation file name ncol nrow size
asset/skin                  face file group inflate material name rgba texcoord vertex
asset/skin/bone             bindpos bindquat body vertid vertweight
asset/texture               builtin class colorspace content_type embed file fileback filedown
                            filefront fileleft fileright fileup gridlayout gridsize height hflip
                            mark markrgb name nchannel random rgb1 rgb2 type vflip width
asset/material              class emission metallic name reflectance rgba roughness shininess
                            specular texrepeat texture texuniform
asset/material/layer        role texture
asset/model                 content_type file name
body                        axisangle childclass euler fuse gravcomp mocap name pos quat simple
                            sleep user xyaxes zaxis
body/inertial ?             axisangle diaginertia euler fullinertia mass pos quat xyaxes zaxis
body/joint                  actuatorfrclimited actuatorfrcrange actuatorgravcomp armature axis
                            class damping frictionloss group limited margin name pos range ref
                            solimpfriction solimplimit solreffriction solreflimit springdamper
                            springref springyield stiffness type user
body/freejoint              align group name
body/geom                   adhesion axisangle castshadow class conaffinity condim contype
                            density euler fitscale fluidcoef fluidshape friction fromto gap
                            group hfield margin mass material mesh name pos priority quat rgba
                            shellinertia size solimp solmix solref surfacevel type user xyaxes
                            zaxis
body/geom/plugin            instance plugin
body/geom/plugin/config     key value
body/attach                 body frame model prefix
body/site                   axisangle class euler fromto group material mesh name pos quat rgba
                            size type user xyaxes zaxis
body/camera                 axisangle class euler focal focalpixel fovy ipd mode name output pos
                            principal principalpixel projection quat resolution sensorsize
                            target user xyaxes zaxis
body/light                  active ambient attenuation bulbradius castshadow class cutoff
                            diffuse dir directional exponent intensity mode name pos range
                            softness specular target texture type
body/plugin                 instance plugin
body/plugin/config          key value
body/flexcomp               axisangle cellcount count dim dof element euler file flatskin group
                            inertiabox mass material mesh name origin point pos quat radius rgba
                            rigid scale spacing texcoord type xyaxes zaxis
body/flexcomp/edge ?        damping equality solimp solref stiffness
body/flexcomp/elasticity ?  damping elastic2d poisson section sectionsize shear thickness yield
                            young
body/flexcomp/contact ?     activelayers conaffinity condim contype friction gap margin passive
                            priority selfcollide solimp solmix solref
body/flexcomp/pin           grid gridrange id range
body/flexcomp/plugin        instance plugin
body/flexcomp/plugin/config key value
deformable                  -
deformable/flex             body cellcount dim dof element elemtexcoord flatskin group material
                            name node nodecoord radius rgba texcoord vertex
deformable/flex/contact ?   activelayers conaffinity condim contype friction gap margin passive
                            priority selfcollide solimp solmix solref
deformable/flex/edge ?      damping stiffness
deformable/flex/elasticity ? damping elastic2d poisson section sectionsize shear thickness yield
                            young
deformable/skin             face file group inflate material name rgba texcoord vertex
deformable/skin/bone        bindpos bindquat body vertid vertweight
contact                     -
contact/pair                adhesion class condim friction gap geom1 geom2 margin name solimp
                            solref solreffriction
contact/exclude             body1 body2 name
tendon                      -
tendon/spatial              actuatorfrclimited actuatorfrcrange armature class damping
                            frictionloss group limited margin material name range rgba
                            solimpfriction solimplimit solreffriction solreflimit springlength
                            springyield stiffness user width
tendon/spatial/site         site
tendon/spatial/geom         geom sidesite
tendon/spatial/pulley       divisor
tendon/fixed                actuatorfrclimited actuatorfrcrange armature class damping
                            frictionloss group limited margin name range solimpfriction
                            solimplimit solreffriction solreflimit springlength springyield
                            stiffness user
tendon/fixed/joint          coef joint
equality                    -
equality/connect            active anchor body1 body2 class name site1 site2 solimp solref
equality/weld               active anchor body1 body2 class name relpose site1 site2 solimp
                            solref torquescale
equality/joint              active class joint1 joint2 name polycoef solimp solref
equality/tendon             active class name polycoef solimp solref tendon1 tendon2
equality/flex               active class flex name solimp solref
equality/flexstrain         active cell class flex name solimp solref
actuator                    -
actuator/general            actdim actearly actlimited actrange armature biasprm biastype body
                            class cranklength cranksite ctrllimited ctrlrange damping delay
                            dynprm dyntype ffrange forcelimited forcerange gainprm gaintype gear
                            group inheritrange input interp joint jointinparent lengthrange name
                            nsample refsite site slidersite tendon user velrange
actuator/motor              armature class cranklength cranksite ctrllimited ctrlrange damping
                            delay forcelimited forcerange gear group interp joint jointinparent
                            lengthrange name nsample refsite site slidersite tendon user
actuator/position           armature class cranklength cranksite ctrllimited ctrlrange damping
                            dampratio delay forcelimited forcerange gear group inheritrange
                            interp joint jointinparent kp kv lengthrange name nsample refsite
                            site slidersite tendon timeconst user
actuator/velocity           armature class cranklength cranksite ctrllimited ctrlrange damping
                            delay forcelimited forcerange gear group interp joint jointinparent
                            kv lengthrange name nsample refsite site slidersite tendon user
actuator/intvelocity        actlimited actrange armature class cranklength cranksite ctrllimited
                            ctrlrange damping dampratio delay forcelimited forcerange gear group
                            inheritrange interp joint jointinparent kp kv lengthrange name
                            nsample refsite site slidersite tendon user
actuator/orientation        class ctrlrange dampratio delay forcelimited forcerange group input
                            interp joint kp kv name nsample refsite site user
actuator/pid                armature class cranklength cranksite ctrllimited ctrlrange damping
                            dampratio delay ffrange forcelimited forcerange gear group imax
                            inheritrange input interp joint jointinparent ki kp kv lengthrange
                            name nsample posrange refsite site slewmax slidersite tendon user
                            velrange
actuator/damper             armature class cranklength cranksite ctrlrange damping delay
                            forcelimited forcerange gear group interp joint jointinparent kv
                            lengthrange name nsample refsite site slidersite tendon user
actuator/cylinder           area armature bias class cranklength cranksite ctrllimited ctrlrange
                            damping delay diameter forcelimited forcerange gear group interp
                            joint jointinparent lengthrange name nsample refsite site slidersite
                            tendon timeconst user
actuator/muscle             armature class cranklength cranksite ctrllimited ctrlrange damping
                            delay force forcelimited forcerange fpmax fvmax gear group interp
                            joint jointinparent lengthrange lmax lmin name nsample range scale
                            slidersite tausmooth tendon timeconst user vmax
actuator/adhesion           body class ctrlrange delay forcelimited forcerange gain group interp
                            name nsample user
actuator/dcmotor            armature class cogging controller cranklength cranksite ctrllimited
                            ctrlrange damping delay gear group inductance input interp joint
                            jointinparent lengthrange lugre motorconst name nominal nsample
                            refsite resistance saturation site slidersite tendon thermal user
actuator/plugin             actdim actearly actlimited actrange armature class cranklength
                            cranksite ctrllimited ctrlrange damping delay dynprm dyntype
                            forcelimited forcerange gear group instance interp joint
                            jointinparent lengthrange name nsample plugin site slidersite tendon
                            user
actuator/plugin/config      key value
sensor                      -
sensor/touch                cutoff delay interp interval name noise nsample site user
sensor/accelerometer        cutoff delay interp interval name noise nsample site user
sensor/velocimeter          cutoff delay interp interval name noise nsample site user
sensor/gyro                 cutoff delay interp interval name noise nsample site user
sensor/force                cutoff delay interp interval name noise nsample site user
sensor/torque               cutoff delay interp interval name noise nsample site user
sensor/magnetometer         cutoff delay interp interval name noise nsample site user
sensor/camprojection        camera cutoff delay interp interval name noise nsample site user
sensor/rangefinder          camera cutoff data delay interp interval name noise nsample site
                            user
sensor/jointpos             cutoff delay interp interval joint name noise nsample user
sensor/jointvel             cutoff delay interp interval joint name noise nsample user
sensor/tendonpos            cutoff delay interp interval name noise nsample tendon user
sensor/tendonvel            cutoff delay interp interval name noise nsample tendon user
sensor/actuatorpos          actuator cutoff delay interp interval name noise nsample user
sensor/actuatorvel          actuator cutoff delay interp interval name noise nsample user
sensor/actuatorfrc          actuator cutoff delay interp interval name noise nsample user
sensor/jointactuatorfrc     cutoff delay interp interval joint name noise nsample user
sensor/tendonactuatorfrc    cutoff delay interp interval name noise nsample tendon user
sensor/ballquat             cutoff delay interp interval joint name noise nsample user
sensor/ballangvel           cutoff delay interp interval joint name noise nsample user
sensor/jointlimitpos        cutoff delay interp interval joint name noise nsample user
sensor/jointlimitvel        cutoff delay interp interval joint name noise nsample user
sensor/jointlimitfrc        cutoff delay interp interval joint name noise nsample user
sensor/tendonlimitpos       cutoff delay interp interval name noise nsample tendon user
sensor/tendonlimitvel       cutoff delay interp interval name noise nsample tendon user
sensor/tendonlimitfrc       cutoff delay interp interval name noise nsample tendon user
sensor/framepos             cutoff delay interp interval name noise nsample objname objtype
                            refname reftype user
sensor/framequat            cutoff delay interp interval name noise nsample objname objtype
                            refname reftype user
sensor/framexaxis           cutoff delay interp interval name noise nsample objname objtype
                            refname reftype user
sensor/frameyaxis           cutoff delay interp interval name noise nsample objname objtype
                            refname reftype user
sensor/framezaxis           cutoff delay interp interval name noise nsample objname objtype
                            refname reftype user
sensor/framelinvel          cutoff delay interp interval name noise nsample objname objtype
                            refname reftype user
sensor/frameangvel          cutoff delay interp interval name noise nsample objname objtype
                            refname reftype user
sensor/framelinacc          cutoff delay interp interval name noise nsample objname objtype user
sensor/frameangacc          cutoff delay interp interval name noise nsample objname objtype user
sensor/subtreecom           body cutoff delay interp interval name noise nsample user
sensor/subtreelinvel        body cutoff delay interp interval name noise nsample user
sensor/subtreeangmom        body cutoff delay interp interval name noise nsample user
sensor/insidesite           cutoff delay enclosed interp interval name noise nsample objname
                            objtype site user
sensor/distance             body1 body2 cutoff delay geom1 geom2 interp interval name noise
                            nsample user
sensor/normal               body1 body2 cutoff delay geom1 geom2 interp interval name noise
                            nsample user
sensor/fromto               body1 body2 cutoff delay geom1 geom2 interp interval name noise
                            nsample user
sensor/contact              body1 body2 cutoff data delay geom1 geom2 interp interval name noise
                            nsample num reduce site subtree1 subtree2 user
sensor/e_potential          cutoff delay interp interval name noise nsample user
sensor/e_kinetic            cutoff delay interp interval name noise nsample user
sensor/clock                cutoff delay interp interval name noise nsample user
sensor/tactile              cutoff delay geom interp interval mesh name nsample user
sensor/user                 cutoff datatype dim name needstage noise objname objtype user
sensor/plugin               cutoff instance name objname objtype plugin refname reftype user
sensor/plugin/config        key value
custom                      -
custom/numeric              data name size
custom/text                 data name
custom/tuple                name
custom/tuple/element        objname objtype prm
keyframe                    -
keyframe/key                act ctrl mpos mquat name plastic qpos qvel time
"""


@lru_cache(maxsize=1)
def schema() -> dict[str, tuple[frozenset[str], bool]]:
    """path -> (attributes, at most once in its parent), read from :data:`TABLE`."""
    words: dict[str, list[str]] = {}
    once: dict[str, bool] = {}
    path = ""
    for line in TABLE.strip("\n").splitlines():
        found = line.split()
        if not line.startswith(" "):
            path, found = found[0], found[1:]
            once[path] = found[:1] == ["?"]
            words[path], found = [], found[once[path]:]
        words[path].extend(word for word in found if word != "-")
    return {path: (frozenset(words[path]), once[path]) for path in words}


def check(root) -> None:
    """Raise the ParseError of the first element of ``root`` (a
    :class:`parsers.mjcf_types.Node` tree, includes expanded) that breaks the schema, in
    document order."""
    table = schema()
    _attributes(root, table["mujoco"][0], prefixed=True)
    _children(root, "", table)


def _children(node, path: str, table) -> None:
    seen: dict[str, int] = {}
    for child in node.children:
        inner = _child_path(path, child.tag, table)
        if inner is None:
            if path in ("body", "worldbody") and child.tag in EXPANDED:
                continue
            if not path and child.tag in ("body",) + EXPANDED:  # MuJoCo would skip it
                raise child.error(f"a <{child.tag}> belongs in <worldbody> (MuJoCo skips one "
                                  f"here without a word, and its bodies with it)")
            where = "<mujoco>" if not path else f"<{node.tag}>"
            raise child.error(f"unknown element <{child.tag}> in {where} (MuJoCo's schema "
                              f"has no such element there)")
        seen[inner] = seen.get(inner, 0) + 1
        if inner != "worldbody":  # its attributes: the compiler's error (it takes none)
            allowed, once = table[inner]
            if once and seen[inner] == 2:
                raise child.error(f"a second <{child.tag}> in this <{node.tag}>; MuJoCo "
                                  f"allows one")
            _attributes(child, allowed)
        _children(child, inner, table)


def _child_path(parent: str, tag: str, table) -> str | None:
    """The table path of a ``tag`` element in the element at ``parent`` ("" for
    ``<mujoco>``), or None when the schema has no such element there."""
    if not parent:
        path = "worldbody" if tag == "worldbody" else (None if tag == "body" else tag)
    else:
        base = "body" if parent == "worldbody" else parent
        path = tag if tag in RECURSIVE and base == tag else f"{base}/{tag}"
    return path if path == "worldbody" or path in table else None


def _attributes(node, allowed: frozenset[str], prefixed: bool = False) -> None:
    """Every attribute of ``node`` is in ``allowed``; with ``prefixed`` (the root, as in
    MuJoCo), attributes with a namespace prefix (``xsi:schemaLocation``) are left alone."""
    for name in node.element.attrib:
        if name in allowed or (prefixed and name.startswith("{")):
            continue
        written = _as_written(node.element, name)
        close = difflib.get_close_matches(written, sorted(allowed), n=1)
        hint = f'; did you mean "{close[0]}"?' if close else ""
        raise node.error(f'unrecognized attribute "{written}" (MuJoCo\'s schema has no such '
                         f"attribute on <{node.tag}>{hint})")


def _as_written(element, name: str) -> str:
    """An attribute's name as the file writes it: lxml's ``{uri}local`` as ``prefix:local``."""
    if not name.startswith("{"):
        return name
    uri, local = name[1:].split("}", 1)
    prefixes = {space: prefix for prefix, space in element.nsmap.items() if prefix}
    prefixes.setdefault("http://www.w3.org/XML/1998/namespace", "xml")
    return f"{prefixes.get(uri, uri)}:{local}"
