"""A small, realistic sample corpus about robotics middleware, for demos and tests.

``write_sample_corpus(folder)`` writes one file of each common format — a Markdown guide
to ROS 2 communication, a plain-text note on sensor fusion, a three-page PDF on motion
planning and an HTML page on tf2 coordinate frames — each long enough to give several
chunks at the default chunk size.
"""

from __future__ import annotations

from pathlib import Path

from .testing.pdf import write_pdf

ROS2_GUIDE_MD = """\
# ROS 2 Communication Guide

ROS 2 (Robot Operating System 2) is a set of libraries and tools for building robot
software. A ROS 2 system is a graph of nodes: each node is a process, or a component
inside a process, that does one job — drive the wheels, read a lidar, estimate the
robot's pose, plan a path. This guide explains how nodes find each other and exchange
data.

## How nodes communicate

ROS 2 nodes communicate in four ways: by publishing and subscribing to **topics**, by
calling **services**, by sending goals to **actions**, and by reading and setting
**parameters**. All four are built on the same middleware layer, DDS (Data Distribution
Service), reached through the ROS middleware interface (rmw). There is no central
master as in ROS 1: nodes discover each other automatically on the network, and nodes
with the same `ROS_DOMAIN_ID` form one ROS graph.

| Mechanism | Pattern | Direction | Typical use |
|-----------|---------|-----------|-------------|
| Topic | publish / subscribe | many-to-many, one way | sensor streams, velocity commands |
| Service | request / response | one client to one server | quick queries, switching modes |
| Action | goal, feedback, result | client to server, long-running | navigation, arm motions |
| Parameter | get / set on a node | any node to one node | configuration and tuning |

## Topics

A topic is a named bus over which nodes exchange messages. Publishers and subscribers
are anonymous to each other: a node that publishes laser scans on `/scan` does not know
which nodes consume them, and there may be none, one or many. This decoupling is what
lets a driver, a logger and a mapping node all share the same stream.

### Publishers and subscribers

A publisher is created with a message type, a topic name and a quality-of-service
profile (or just a queue depth). A subscription names the same type and topic and a
callback that the executor runs for each message that arrives. The example below is
the classic talker in Python (rclpy); it publishes a string twice per second.

```python
import rclpy
from rclpy.node import Node
from std_msgs.msg import String


class Talker(Node):
    def __init__(self):
        super().__init__("talker")
        # Queue depth 10: keep the last ten messages for late or slow readers.
        self.publisher = self.create_publisher(String, "chatter", 10)
        self.timer = self.create_timer(0.5, self.tick)
        self.count = 0

    def tick(self):
        msg = String()
        msg.data = f"hello {self.count}"
        self.publisher.publish(msg)
        self.count += 1


def main():
    rclpy.init()
    rclpy.spin(Talker())
    rclpy.shutdown()
```

The matching listener calls `self.create_subscription(String, "chatter", self.on_message, 10)`
and prints `msg.data` in `on_message`. Callbacks only run while the node is being spun by
an executor; a `MultiThreadedExecutor` with reentrant callback groups lets slow
callbacks run in parallel.

### Message types

Messages are defined in `.msg` files, for example `geometry_msgs/msg/Twist` (linear and
angular velocity) or `sensor_msgs/msg/LaserScan`. The build generates C++ and Python
code for every interface, so nodes written in different languages can talk to each
other. Nodes loaded as components into the same process can use intra-process
communication, which hands messages over by pointer instead of serializing them.

## Services

A service is a remote procedure call: a client sends a request and the server returns
exactly one response. Services are defined in `.srv` files, with the request fields
above a `---` line and the response fields below it; `example_interfaces/srv/AddTwoInts`
takes two integers `a` and `b` and returns their `sum`. Service calls should finish
quickly. Clients in rclpy usually call `call_async` and wait on the returned future,
because a synchronous call made from inside a callback can deadlock a single-threaded
executor.

## Actions

An action is for goals that take time, like driving to a pose or moving an arm. The
client sends a goal, the server accepts or rejects it, streams feedback while it works,
and finally returns a result; the client can cancel the goal at any time. Actions are
defined in `.action` files with three parts — goal, result and feedback — and are built
on topics and services: three services (send goal, cancel goal, get result) and two
topics (feedback and status). Navigation2's `nav2_msgs/action/NavigateToPose` is a
typical action: its feedback reports the current pose and the distance remaining.

## Parameters

Parameters are named configuration values owned by a node: integers, floats, booleans,
strings, byte arrays and arrays of these. A node declares each parameter with a default,
and its values can be given on the command line, in a YAML file passed at launch, or
changed at run time. Every node serves a set of parameter services, which is how
`ros2 param get` and `ros2 param set` reach it; a node can register a callback to
validate or reject changes. The standard `use_sim_time` parameter makes a node follow
the simulation clock on `/clock` instead of the wall clock.

## DDS and quality of service

DDS handles discovery, serialization and transport. Several DDS implementations can
be used through rmw, chosen with the `RMW_IMPLEMENTATION` environment variable:
eProsima Fast DDS (the default in recent distributions), Eclipse Cyclone DDS and RTI
Connext DDS. An alternative middleware based on Zenoh, `rmw_zenoh`, is also available
for recent distributions. Nodes using different rmw implementations may not
interoperate, so a system should use one throughout.

### QoS policies

Each publisher and subscription carries a quality-of-service (QoS) profile that says
how messages are delivered.

| Policy | Options | Notes |
|--------|---------|-------|
| History | Keep last, Keep all | keep last stores up to Depth samples |
| Depth | integer | queue size used with Keep last |
| Reliability | Reliable, Best effort | reliable retransmits lost samples |
| Durability | Volatile, Transient local | transient local replays samples to late joiners |
| Deadline | duration | maximum expected time between messages |
| Lifespan | duration | age after which a message is dropped |
| Liveliness | Automatic, Manual by topic | how a publisher signals it is alive |

The default profile is keep last 10, reliable and volatile. The sensor data profile
uses best effort delivery with a small queue, because for a camera or lidar the newest
sample matters more than a lost old one. Maps and robot descriptions are commonly
published with transient local durability so that a node started later still receives
the last message.

### QoS compatibility

A subscription only receives messages when the publisher offers at least what the
subscription requests. A best-effort publisher and a reliable subscription are
incompatible, and so are a volatile publisher and a transient-local subscription: no
messages flow, and ROS 2 reports an incompatible QoS event. A reliable publisher with a
best-effort subscription works. When a topic seems silent, compare the QoS of both
ends with `ros2 topic info --verbose`.

## Inspecting a running system

The `ros2` command-line tool shows the graph and lets you talk to it:

```bash
ros2 node list
ros2 topic list -t
# print messages as they arrive
ros2 topic echo /chatter
ros2 topic hz /scan
ros2 topic info /scan --verbose
ros2 service call /add_two_ints example_interfaces/srv/AddTwoInts "{a: 2, b: 3}"
ros2 param set /talker use_sim_time true
```

`rqt_graph` draws the same graph: nodes as ellipses, topics as the arrows between them.
"""

SENSOR_FUSION_TXT = """\
Sensor fusion notes: Kalman filters for robot state estimation

Why fuse sensors
No single sensor tells a mobile robot where it is. Wheel odometry is smooth and fast but
drifts without bound, because every wheel slip and every error in the wheel radius adds
up. An IMU measures angular velocity and linear acceleration at hundreds of hertz, but
integrating its noise and bias makes position drift within seconds. GPS gives an absolute
position that does not drift, but it arrives at a few hertz, jumps by metres under trees
and near buildings, and fails indoors. Sensor fusion combines these measurements, weighted
by how much each can be trusted, into one estimate that is better than any of them alone.

The Kalman filter
The Kalman filter estimates the state of a linear system with Gaussian noise. It keeps a
state vector x (for example position, heading and velocity) and a covariance matrix P that
says how uncertain that estimate is. Each cycle has two steps.

Predict: a motion model moves the state forward in time, x = F x + B u, where u is the
control input. The covariance grows, P = F P F^T + Q, where Q is the process noise: how
much the real motion can differ from the model.

Update: a measurement z arrives with its own noise covariance R. The filter compares it
with the measurement it expected, H x. The difference is the innovation, y = z - H x, with
covariance S = H P H^T + R. The Kalman gain K = P H^T S^-1 decides how far to move toward
the measurement: the state becomes x + K y and the covariance shrinks to (I - K H) P. A
precise sensor (small R) pulls the estimate strongly; a noisy one barely moves it.

For a linear system with Gaussian noise, the Kalman filter is the optimal estimator in the
least-squares sense, and it needs only the current estimate, not the history.

Nonlinear systems: EKF and UKF
Robots are rarely linear: heading enters the motion model through sines and cosines, and a
range-bearing measurement to a landmark is nonlinear in the pose. The extended Kalman filter
(EKF) linearizes the motion and measurement models around the current estimate using their
Jacobians, then applies the ordinary equations. It is cheap and works well when the estimate
is good and the models are smooth, but it can diverge when the linearization is poor. The
unscented Kalman filter (UKF) instead propagates a small set of sigma points through the
nonlinear functions and recovers the mean and covariance from them. It needs no Jacobians
and captures the nonlinearity more accurately, at a somewhat higher cost than an EKF.

Complementary filter
For estimating orientation from an IMU alone, a complementary filter is often enough: it
trusts the integrated gyroscope over short time scales and the accelerometer's measurement of
gravity over long time scales, blending them with a high-pass and a low-pass filter. Madgwick
and Mahony filters are popular refinements that can also use a magnetometer for heading.

Tuning Q and R
Most of the work in a real filter is tuning. R comes from the sensor: a datasheet, or the
variance of readings while the robot stands still. Q is harder, because it describes how
wrong the motion model is. If Q is too small the filter becomes overconfident and ignores
measurements; if it is too large the estimate follows every noisy reading. A useful check is
the innovation sequence: when the filter is consistent, the innovations are zero-mean and
their normalized squares follow a chi-square distribution.

Outlier rejection
A single bad GPS fix can pull the estimate away. Innovation gating rejects a measurement
whose Mahalanobis distance, y^T S^-1 y, exceeds a chi-square threshold for the measurement
dimension. Time matters too: measurements must carry the time they were taken, and a filter
that receives a delayed measurement should either process it at the right time or discard
it.

Fusion in ROS 2
The robot_localization package provides nonlinear state estimation for ROS 2: ekf_node and
ukf_node fuse any number of odometry, IMU, pose and twist inputs into a 15-dimensional state
(3D position, orientation, linear and angular velocity, and linear acceleration). Each input
has a configuration vector that selects which of its fields are fused. navsat_transform_node
converts GPS fixes into the robot's world frame so they can be fused like any other pose.

A common setup follows REP 105 and runs two filters. The first fuses wheel odometry and the
IMU and publishes the odom -> base_link transform: continuous and smooth, but drifting. The
second also fuses GPS or a localization system and publishes map -> odom, which may jump when
an absolute measurement corrects the drift. Controllers work in the odom frame so that a jump
never turns into a sudden steering command, while planners and goals live in the map frame.
"""

MOTION_PLANNING_PAGES = [
    """\
Motion Planning Primer

Page 1. Configuration space and graph search

Motion planning finds a path that takes a robot from a start to a goal without collisions.
The problem is posed in configuration space (C-space): a configuration is one value for every
degree of freedom of the robot, so a planar mobile robot has the three-dimensional C-space
(x, y, theta) and a six-joint arm has a six-dimensional one. Obstacles in the workspace map to
forbidden regions of C-space, and planning becomes finding a continuous curve through the
free space between the start and goal configurations.

For low-dimensional problems the free space can be discretized into a grid or a lattice and
searched as a graph. Dijkstra's algorithm expands nodes in order of their cost from the start
and returns a shortest path. A* adds a heuristic, an estimate of the remaining cost to the goal,
and expands nodes in order of cost so far plus heuristic. If the heuristic never overestimates
the true cost it is admissible, and A* still returns an optimal path while expanding far fewer
nodes; the straight-line distance is the usual choice for a mobile robot on a grid.

Grid search is resolution complete: it finds a path whenever one exists at the resolution of
the grid. Its cost grows exponentially with the number of dimensions, which is why it is used
for mobile robots in the plane but not for the joint space of a robot arm. Variants such as
D* Lite repair the previous search when the map changes instead of planning from scratch,
which suits robots that discover obstacles as they drive.
""",
    """\
Page 2. Sampling-based planning

Sampling-based planners avoid building an explicit representation of free space. They draw
random configurations, keep those a collision checker accepts, and connect them with a simple
local planner, usually a straight line in C-space checked at small steps.

The probabilistic roadmap (PRM) builds a graph once: it samples many free configurations and
connects each to its nearest neighbours when the local path between them is free. Queries
then connect the start and goal to the roadmap and run a graph search. PRM suits multi-query
settings, where the environment is static and many paths are planned in it.

The rapidly-exploring random tree (RRT) is a single-query planner. It grows a tree from the
start: it samples a random configuration, finds the nearest node in the tree, and extends
that node a short step toward the sample. The tree is biased toward large unexplored regions,
so it spreads quickly through free space. RRT-Connect grows trees from both the start and the
goal and tries to join them, which is often much faster in practice.

These planners are probabilistically complete: if a path exists, the probability of finding
it approaches one as the number of samples grows. Plain RRT is not optimal; its paths are
jagged and are usually shortened afterwards. RRT* adds a rewiring step that reconnects nearby
nodes through the new node when that lowers their cost, which makes it asymptotically optimal:
the path cost converges to the optimum as sampling continues.

The Open Motion Planning Library (OMPL) implements PRM, RRT, RRT-Connect, RRT* and many other
planners, and MoveIt, the manipulation framework for ROS, uses OMPL as its default planning
library.
""",
    """\
Page 3. Trajectories and local planning

A path is a sequence of configurations; a trajectory adds timing. Before a robot arm can
follow a planned path, a time-parameterization step assigns velocities and accelerations that
respect the limits of every joint. MoveIt provides time-optimal trajectory generation for this.
Optimization-based planners such as CHOMP, STOMP and TrajOpt start from an initial trajectory,
often a straight line, and improve it by minimizing a cost that combines smoothness with
distance from obstacles. They produce smooth motions but can get stuck in local minima, so they
are often used to refine the output of a sampling-based planner.

Collision checking is the most expensive part of planning. Libraries such as FCL test robot
links, represented as meshes or simple primitives, against an occupancy map or an octree, and
broad-phase checks with bounding volumes discard most pairs before exact tests.

Mobile robots usually split planning in two. A global planner finds a route on the whole map,
and a local planner or controller follows it while reacting to obstacles the map did not
contain. In Navigation2 (Nav2), the ROS 2 navigation stack, the global planner can be NavFn,
which runs Dijkstra or A* on the costmap, or the Smac planners, which include a hybrid-A*
planner for car-like robots and a state lattice planner. Controllers include DWB, a dynamic
window approach that scores sampled velocity commands, Regulated Pure Pursuit, which follows
the path at a safe speed, and MPPI, a model predictive controller that evaluates thousands of
sampled trajectories each cycle. Behavior trees decide when to replan, recover or give up.
""",
]

TF2_HTML = """\
<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Coordinate Frames with tf2</title>
  <style>body { font-family: sans-serif; max-width: 48em; margin: auto; }</style>
  <script>window.analytics = { track: function () {} };</script>
</head>
<body>
<nav><a href="index.html">Robotics notes</a></nav>
<article>
<h1>Coordinate Frames with tf2</h1>
<p>A robot is full of coordinate frames: one for the map, one for the odometry origin, one
for the robot's base, and one for every sensor and joint. A lidar reports points in its own
frame; to put them on the map, a node must know where the lidar is on the robot and where the
robot is on the map at the time the scan was taken. <strong>tf2</strong>, the ROS 2 transform
library, keeps track of these relationships over time.</p>

<h2>The transform tree</h2>
<p>tf2 organizes frames in a tree. Each edge is a transform, a translation plus a rotation,
from a parent frame to a child frame, published on the <code>/tf</code> topic. Every frame
has exactly one parent, so there is a unique chain between any two frames, and tf2 composes
the transforms along it. A typical mobile robot follows REP 105:</p>
<ul>
  <li><em>map</em>: a world-fixed frame; the robot's pose in it does not drift but may jump.</li>
  <li><em>odom</em>: a world-fixed frame in which the pose is continuous but drifts.</li>
  <li><em>base_link</em>: rigidly attached to the robot's body.</li>
  <li>Sensor frames such as <em>laser</em> or <em>camera_link</em>, children of base_link.</li>
</ul>
<p>Localization publishes map to odom, odometry publishes odom to base_link, and the robot
description publishes the fixed transforms from base_link to each sensor.</p>

<h2>Static and dynamic transforms</h2>
<p>Transforms that never change, such as where a camera is bolted on the chassis, are
published once on <code>/tf_static</code> with transient local durability, so that nodes
started later still receive them. The <code>static_transform_publisher</code> tool publishes
one from the command line, and <code>robot_state_publisher</code> publishes all fixed joints
of a URDF robot description. Transforms that move, such as a wheel joint or the odometry
estimate, are broadcast repeatedly with a timestamp on <code>/tf</code>.</p>

<h2>Broadcasting a transform</h2>
<p>A node that knows where one frame is relative to another creates a transform broadcaster
and sends a <code>geometry_msgs/msg/TransformStamped</code> message: the header carries the
parent frame id and the time stamp, <code>child_frame_id</code> names the child, and the
transform holds a translation vector and a rotation quaternion. Odometry nodes typically
broadcast odom to base_link every time they publish a new odometry estimate, using the
timestamp of the wheel encoder readings rather than the time of publishing, so that
listeners can match the transform to sensor data taken at the same moment.</p>

<h2>Listening for transforms</h2>
<p>A node that needs transforms creates a buffer and a transform listener. The listener
subscribes to <code>/tf</code> and <code>/tf_static</code> and fills the buffer, which keeps
a short history, ten seconds by default. <code>lookup_transform(target, source, time)</code>
returns the transform between two frames at a given time, interpolating between the samples
it holds. Asking for a time newer than the latest data raises an extrapolation exception, so
code that processes sensor data usually waits briefly for the transform with a timeout, or
uses a message filter that holds each message until its transform is available.</p>

<h2>Debugging frames</h2>
<table>
  <tr><th>Tool</th><th>What it shows</th></tr>
  <tr><td>ros2 run tf2_tools view_frames</td><td>a PDF of the whole tree with publish rates</td></tr>
  <tr><td>ros2 run tf2_ros tf2_echo map base_link</td><td>the current transform between two frames</td></tr>
  <tr><td>RViz TF display</td><td>every frame drawn as axes in 3D</td></tr>
</table>
<p>Most tf2 problems are a missing link in the tree, two nodes publishing the same child
frame, or clocks that disagree: when one node uses simulation time and another the wall
clock, lookups fail with timestamps far in the past or future.</p>
</article>
<noscript>Enable JavaScript to see the interactive frame diagram.</noscript>
<script>window.analytics.track("page_view");</script>
</body>
</html>
"""

#: File name -> text of the text-based sample files.
_TEXT_FILES = {
    "ros2_communication_guide.md": ROS2_GUIDE_MD,
    "sensor_fusion_notes.txt": SENSOR_FUSION_TXT,
    "tf2_coordinate_frames.html": TF2_HTML,
}
PDF_NAME = "motion_planning_primer.pdf"


def write_sample_corpus(folder: Path) -> list[Path]:
    """Write the sample corpus into ``folder`` (created if needed); returns the files, sorted."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, text in _TEXT_FILES.items():
        path = folder / name
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    paths.append(write_pdf(folder / PDF_NAME, MOTION_PLANNING_PAGES, title="Motion Planning Primer"))
    return sorted(paths)
